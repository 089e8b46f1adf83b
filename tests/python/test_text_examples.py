"""The book's text examples on Debian's fortunes (examples/word2vec.py,
understand_sentiment.py, transformer_lm.py and sample.py) run end to end
on a few hundred samples, in one process and under `mpirun -np 2`: they
train, keep the ranks' parameters equal (check_consistency), print the
validation split's metrics once (rank 0), and the language model's saved
inference model generates text."""
import os
import re
import sys

import pytest

import fluid
from test_book_examples import NP, mpirun_cmd, run

LM_ARGS = ["--samples", "256", "--seq-len", "32", "--width", "32",
           "--layers", "2", "--heads", "2", "--warmup-steps", "4"]

# id, script, arguments, the line rank 0 prints once
EXAMPLES = [
    ("word2vec", "word2vec.py", ["--samples", "1600"],
     r"perplexity [0-9.]+ per word; vocabulary \d+ words, embedding dense"),
    ("word2vec-sparse", "word2vec.py", ["--samples", "1600", "--is-sparse"],
     r"perplexity [0-9.]+ per word; vocabulary \d+ words, embedding sparse"),
    ("sentiment-conv", "understand_sentiment.py", ["--samples", "320"],
     r"test loss [0-9.]+, accuracy [0-9.]+"),
    ("sentiment-lstm", "understand_sentiment.py",
     ["--samples", "320", "--net", "lstm"],
     r"test loss [0-9.]+, accuracy [0-9.]+"),
    ("transformer_lm", "transformer_lm.py", LM_ARGS,
     r"perplexity [0-9.]+ per character"),
]


def fortunes_or_skip():
    if not fluid.datasets.fortunes.available():
        pytest.skip(f"no fortunes at {fluid.datasets.FORTUNES}")


def env():
    return dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


@pytest.mark.parametrize("world", [1, NP])
@pytest.mark.parametrize("script,args,line", [e[1:] for e in EXAMPLES],
                         ids=[e[0] for e in EXAMPLES])
def test_text_example_runs(repo_root, script, args, line, world):
    fortunes_or_skip()
    cmd = [sys.executable, os.path.join(repo_root, "examples", script)] + args
    r = run(mpirun_cmd(cmd) if world > 1 else cmd, env())
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert len(re.findall(line, r.stdout)) == 1, out
    for rank in range(world):
        assert f"rank {rank}: trained" in r.stdout, out
    assert "nan" not in r.stdout, out


def test_the_language_model_saves_a_model_that_sample_reads(repo_root,
                                                            tmp_path):
    fortunes_or_skip()
    model = str(tmp_path / "char_lm")
    examples = os.path.join(repo_root, "examples")
    r = run(mpirun_cmd([sys.executable,
                        os.path.join(examples, "transformer_lm.py")]
                       + LM_ARGS + ["--save-dir", model]), env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("saved the inference model") == 1, r.stdout
    sample = [sys.executable, os.path.join(examples, "sample.py"),
              "--model-dir", model, "--prompt", "A ", "--length", "20"]
    r = run(sample, env())
    assert r.returncode == 0, r.stdout + r.stderr
    text = r.stdout.rstrip("\n")
    assert text.startswith("A ") and 2 <= len(text) <= 22, text
    # The same seed draws the same text.
    assert run(sample, env()).stdout.rstrip("\n") == text
    r = run([sys.executable, os.path.join(examples, "sample.py"),
             "--model-dir", str(tmp_path)], env())
    assert r.returncode != 0 and "vocab.json" in r.stderr, r.stderr
