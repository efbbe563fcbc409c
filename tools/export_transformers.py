#!/usr/bin/env python3
"""Exports transformers' architectures to ONNX, untrained and small, to check ember on them.

    export_transformers.py [--out DIR] [--opset 17] [NAME ...]

The models in models/ are ember's own builders; this is what transformers' exporter
writes for the families people deploy: BERT, GPT-2, Llama, Mistral, Qwen2/3, Gemma,
Phi-3, OLMo and T5's encoder, each with the spellings of its own (float32 Casts around
RMSNorm, rotary tables from positions, Gemma's (1 + weight), Qwen3's q/k norms, T5's
relative position buckets). Configurations are built in code (2 layers, hidden 256, a
vocabulary of 1000): nothing is downloaded, and weights are random. Inputs are
input_ids and attention_mask [batch, sequence]; the output is the logits (the last
hidden state for the encoders). Then, for example:

    python3 tests/models/check_onnx_files.py --infer build/infer --precision fp16 \\
        --dims batch=2,sequence=300 build/transformers/*.onnx

Needs torch and transformers, which ember does not otherwise depend on (PyPI; see
tools/export_torchvision.py). The export runs on the CPU, with the TorchScript exporter
(dynamo=False), as most published ONNX files were made.
"""
import argparse
import os

SMALL = dict(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=4096)


def build(name):
    """(model, output attribute) for an architecture name."""
    import transformers as t
    decoders = {
        "llama": lambda: t.LlamaForCausalLM(t.LlamaConfig(**SMALL)),
        "mistral": lambda: t.MistralForCausalLM(t.MistralConfig(**SMALL)),
        "qwen2": lambda: t.Qwen2ForCausalLM(t.Qwen2Config(**SMALL)),
        "qwen3": lambda: t.Qwen3ForCausalLM(t.Qwen3Config(head_dim=64, **SMALL)),
        "gemma": lambda: t.GemmaForCausalLM(t.GemmaConfig(head_dim=64, **SMALL)),
        "phi3": lambda: t.Phi3ForCausalLM(t.Phi3Config(pad_token_id=0, **SMALL)),
        "olmo": lambda: t.OlmoForCausalLM(t.OlmoConfig(pad_token_id=0, **SMALL)),
        "gpt2": lambda: t.GPT2LMHeadModel(t.GPT2Config(vocab_size=1000, n_embd=256, n_layer=2, n_head=4)),
    }
    encoders = {
        "bert": lambda: t.BertModel(t.BertConfig(vocab_size=1000, hidden_size=256, num_hidden_layers=2,
                                                 num_attention_heads=4, intermediate_size=512)),
        "t5_encoder": lambda: t.T5EncoderModel(t.T5Config(vocab_size=1000, d_model=256, d_kv=64, d_ff=512,
                                                          num_layers=2, num_heads=4)),
    }
    if name in decoders:
        return decoders[name](), "logits"
    return encoders[name](), "last_hidden_state"


DEFAULT_MODELS = ["bert", "gpt2", "llama", "mistral", "qwen2", "qwen3", "gemma", "phi3", "olmo", "t5_encoder"]


def export(name, out_dir, opset):
    import torch
    torch.manual_seed(0)
    model, output = build(name)
    model.eval()

    class Outputs(torch.nn.Module):  # one tensor out, no cache
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            extra = {"use_cache": False} if output == "logits" else {}
            return getattr(self.inner(input_ids=input_ids, attention_mask=attention_mask, **extra), output)

    ids = torch.randint(0, 1000, (1, 16))
    mask = torch.ones(1, 16, dtype=torch.int64)
    path = os.path.join(out_dir, name + ".onnx")
    dims = {0: "batch", 1: "sequence"}
    torch.onnx.export(Outputs(model), (ids, mask), path, opset_version=opset, dynamo=False,
                      input_names=["input_ids", "attention_mask"], output_names=[output],
                      dynamic_axes={"input_ids": dims, "attention_mask": dims, output: dims})
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", default=DEFAULT_MODELS, help=f"of {', '.join(DEFAULT_MODELS)}")
    parser.add_argument("--out", default=os.path.join("build", "transformers"))
    parser.add_argument("--opset", type=int, default=17)
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in DEFAULT_MODELS]
    if unknown:
        parser.error(f"unknown: {', '.join(unknown)}")
    os.makedirs(args.out, exist_ok=True)
    for name in args.names:
        print(export(name, args.out, args.opset), flush=True)


if __name__ == "__main__":
    main()
