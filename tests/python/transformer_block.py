"""A pre-LN transformer decoder block built with fluid.layers, and the same
block as a torch.nn.Module, for test_transformer_block.py and
mpi_transformer.py:

    h = x + out_proj(attention(ln1(x)))      causal multi-head self-attention
    y = h + fc2(gelu(fc1(ln2(h))))

The fluid block names its parameters as PARAMS lists them, so that one set
of values (init_params) loads into both."""
import numpy as np
import torch

import fluid

L = fluid.layers

# name -> shape as a function of the model width D.
PARAMS = {
    "ln1.w": lambda d: [d], "ln1.b": lambda d: [d],
    "q.w": lambda d: [d, d], "q.b": lambda d: [d],
    "k.w": lambda d: [d, d], "k.b": lambda d: [d],
    "v.w": lambda d: [d, d], "v.b": lambda d: [d],
    "o.w": lambda d: [d, d], "o.b": lambda d: [d],
    "ln2.w": lambda d: [d], "ln2.b": lambda d: [d],
    "fc1.w": lambda d: [d, 4 * d], "fc1.b": lambda d: [4 * d],
    "fc2.w": lambda d: [4 * d, d], "fc2.b": lambda d: [d],
}


def init_params(width, seed):
    """Random values for every parameter (fluid's layout: fc weights
    [in, out])."""
    rng = np.random.RandomState(seed)
    out = {}
    for name, shape in PARAMS.items():
        if name.startswith("ln") and name.endswith(".w"):
            out[name] = rng.uniform(0.5, 1.5, shape(width))
        else:
            out[name] = rng.uniform(-0.3, 0.3, shape(width))
    return out


def _fc(x, size, name, act=None):
    return L.fc(x, size, num_flatten_dims=2, param_attr=name + ".w",
                bias_attr=name + ".b", act=act)


def fluid_block(x, seq_len, width, heads, dtype, prefix=""):
    """The block on x [-1, seq_len, width] of `dtype`; its parameters are
    named prefix + PARAMS' names."""
    h = L.layer_norm(x, begin_norm_axis=2, param_attr=prefix + "ln1.w",
                     bias_attr=prefix + "ln1.b")
    q, k, v = (_fc(h, width, prefix + n) for n in "qkv")
    mask = L.causal_attention_mask(seq_len, dtype)
    a = fluid.nets.scaled_dot_product_attention(q, k, v, num_heads=heads,
                                                additive_mask=mask)
    h = L.elementwise_add(x, _fc(a, width, prefix + "o"))
    f = L.layer_norm(h, begin_norm_axis=2, param_attr=prefix + "ln2.w",
                     bias_attr=prefix + "ln2.b")
    f = _fc(_fc(f, 4 * width, prefix + "fc1", act="gelu"), width,
            prefix + "fc2")
    return L.elementwise_add(h, f)


class TorchBlock(torch.nn.Module):
    """The same block from torch.nn: LayerNorm, MultiheadAttention with a
    float causal mask, Linear and GELU."""

    def __init__(self, seq_len, width, heads, dtype):
        super().__init__()
        kw = {"dtype": dtype}
        self.ln1 = torch.nn.LayerNorm(width, **kw)
        self.attn = torch.nn.MultiheadAttention(width, heads, batch_first=True,
                                                **kw)
        self.ln2 = torch.nn.LayerNorm(width, **kw)
        self.fc1 = torch.nn.Linear(width, 4 * width, **kw)
        self.fc2 = torch.nn.Linear(4 * width, width, **kw)
        self.register_buffer("mask", torch.triu(
            torch.full((seq_len, seq_len), -1e9, dtype=dtype), 1))

    def forward(self, x):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=self.mask, need_weights=False)
        h = x + a
        return h + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(h))))

    def _tensors(self):
        """fluid parameter name -> (torch tensor or slice, transposed)."""
        w, b = self.attn.in_proj_weight, self.attn.in_proj_bias
        d = self.ln1.weight.shape[0]
        out = {"ln1.w": (self.ln1.weight, False),
               "ln1.b": (self.ln1.bias, False),
               "o.w": (self.attn.out_proj.weight, True),
               "o.b": (self.attn.out_proj.bias, False),
               "ln2.w": (self.ln2.weight, False),
               "ln2.b": (self.ln2.bias, False),
               "fc1.w": (self.fc1.weight, True),
               "fc1.b": (self.fc1.bias, False),
               "fc2.w": (self.fc2.weight, True),
               "fc2.b": (self.fc2.bias, False)}
        for i, n in enumerate("qkv"):
            out[n + ".w"] = (w, True, slice(i * d, (i + 1) * d))
            out[n + ".b"] = (b, False, slice(i * d, (i + 1) * d))
        return out

    def load(self, params, prefix=""):
        with torch.no_grad():
            for name, spec in self._tensors().items():
                t, transposed = spec[0], spec[1]
                value = torch.tensor(params[prefix + name], dtype=t.dtype)
                value = value.T if transposed else value
                if len(spec) == 3:
                    t[spec[2]] = value
                else:
                    t.copy_(value)

    def grads(self, prefix=""):
        """fluid parameter name -> its gradient in fluid's layout."""
        return self.values(prefix, grad=True)

    def values(self, prefix="", grad=False):
        """fluid parameter name -> its value (or gradient) in fluid's
        layout."""
        out = {}
        for name, spec in self._tensors().items():
            g = spec[0].grad if grad else spec[0]
            g = g[spec[2]] if len(spec) == 3 else g
            out[prefix + name] = (g.T if spec[1] else g).detach().numpy()
        return out
