"""The chapter 08 decoding loop of test_beam_search.py on fluid.CUDAPlace:
beam_search and beam_search_decode (their CUDA kernels copy to the host
and back) inside a While loop over tensor arrays decode what the CPU
decodes, for a greedy, a middle and an exhaustive beam. Skipped without a
CUDA device (the CUDA emulation, tools/cuda_emu, runs it)."""
import pytest

import fluid
from test_beam_search import V, bigram, decode

pytestmark = pytest.mark.skipif(
    fluid.cuda_device_count() == 0,
    reason="no CUDA device visible" if fluid.is_compiled_with_cuda()
    else "built without CUDA")


@pytest.mark.parametrize("beam_size,max_len", [(1, 5), (3, 4), (V ** 3, 3)])
def test_cuda_decodes_what_the_cpu_decodes(beam_size, max_len):
    table = bigram(7, end_weight=0.5)
    starts = [0, 1, 3]
    cpu = decode(table, starts, beam_size, max_len)
    cuda = decode(table, starts, beam_size, max_len, fluid.CUDAPlace(0))
    for (cpu_sentences, cpu_scores), (sentences, scores) in zip(cpu, cuda):
        assert sentences == cpu_sentences
        assert scores == pytest.approx(cpu_scores, abs=1e-6)
