#!/usr/bin/env python3
"""Generate saturn's model corpus: real-architecture ONNX graphs with their weights stripped.

Run from the repository root with the corpus virtual environment (see README.md for creating it):

    build/corpus-venv/bin/python bench/corpus/generate.py [--only NAME ...]

For every model in SPECS this script builds the network from a config (no hub access, random weights from
torch.manual_seed(SEED)), exports it to ONNX (TorchScript exporter or dynamo exporter), moves every float32
initializer with more than 64 elements into a graph input whose value range is recorded in the metadata entry
`saturn.seeded_weights`, checks the result (onnx checker, onnxruntime load, one onnxruntime run of the
materialized model with uniform random weights), writes models/NAME.onnx and finally rewrites manifest.json and
README.md. Each model is exported in its own subprocess so that a crash or a failure only loses that model.
"""
from __future__ import annotations

import argparse
import gc
import inspect
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import traceback
from importlib import metadata as md
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS_DIR = HERE / "models"
MANIFEST = HERE / "manifest.json"
README = HERE / "README.md"
GENERATOR = "build/corpus-venv/bin/python bench/corpus/generate.py"
SEED = 20260101
SEEDED_MIN_ELEMENTS = 64  # float32 initializers with more elements than this become seeded graph inputs

# Families held out from all tuning work (chosen once, by hand, so that both parts contain decoders, encoders,
# encoder-decoders/audio, vision transformers and CNNs). Rules, canonical forms and cost-model decisions are
# developed on the "tuning" part only; the "held-out" part is only ever reported.
HELD_OUT_FAMILIES = {
    "qwen2", "gpt-neox", "phi",              # decoders
    "roberta", "deberta-v2", "electra",      # encoders
    "bart", "wav2vec2",                      # encoder-decoder / audio
    "deit", "mobilevit", "segformer",        # vision transformers / segmentation
    "efficientnet", "densenet",              # CNNs
}

# --------------------------------------------------------------------------------------------------------------
# Model specifications
# --------------------------------------------------------------------------------------------------------------


class In:
    """One real graph input: shape entries are ints or symbolic names (strings, sizes given by the spec dims)."""

    def __init__(self, name, dtype, shape, high=None, kind="normal"):
        self.name, self.dtype, self.shape, self.high, self.kind = name, dtype, list(shape), high, kind


class Spec:
    def __init__(self, name, family, source, exporter, opset, build, inputs, dims, outputs, export_dims=None,
                 dynamic=True):
        self.name, self.family, self.source = name, family, source
        self.exporter, self.opset, self.build = exporter, opset, build
        self.inputs, self.dims, self.outputs = inputs, dims, outputs
        # sizes used for the example inputs at export time (batch 2 so that the exporters keep batch symbolic)
        self.export_dims = dict(dims, **(export_dims or {}))
        if "batch" in self.export_dims and not export_dims:
            self.export_dims["batch"] = 2
        self.dynamic = dynamic


def _summ(config, keys):
    out = {}
    for k in keys:
        v = getattr(config, k, None)
        if v is not None and not callable(v):
            out[k] = v if isinstance(v, (int, float, str, bool, list)) else str(v)
    return out


TEXT_KEYS = ["hidden_size", "d_model", "n_embd", "dim", "num_hidden_layers", "n_layer", "n_layers", "num_layers",
             "encoder_layers", "decoder_layers", "num_decoder_layers", "num_attention_heads", "n_head", "n_heads",
             "num_heads", "encoder_attention_heads", "decoder_attention_heads", "num_key_value_heads",
             "intermediate_size", "hidden_dim", "ffn_dim", "d_ff", "encoder_ffn_dim", "decoder_ffn_dim",
             "embedding_size", "vocab_size", "max_position_embeddings", "n_positions", "head_dim",
             "num_mel_bins", "image_size", "patch_size", "hidden_sizes", "depths", "embed_dim", "num_queries",
             "window_size"]


def hf_model(cls_name, config_name, attn="eager", **cfg):
    """Return a builder for a transformers model constructed from a config with seeded random weights."""

    def build():
        import torch
        import transformers
        config = getattr(transformers, config_name)(**cfg)
        if attn is not None:
            config._attn_implementation = attn
        torch.manual_seed(SEED)
        model = getattr(transformers, cls_name)(config)
        info = _summ(config, TEXT_KEYS)
        if "num_labels" in cfg:
            info["num_labels"] = cfg["num_labels"]
        for sub in ("text_config", "vision_config", "backbone_config"):
            sc = getattr(config, sub, None)
            if sc is not None:
                info[sub] = _summ(sc, TEXT_KEYS)
        if attn is not None:
            info["attn_implementation"] = attn
        return model, cls_name, info
    return build


def tv_model(fn_name, **kw):
    def build():
        import torch
        import torchvision
        torch.manual_seed(SEED)
        fn = getattr(torchvision.models, fn_name, None) or getattr(torchvision.models.segmentation, fn_name)
        model = fn(weights=None, **kw)
        return model, f"torchvision.models.{fn_name}", dict(kw)
    return build


def timm_model(name, **kw):
    def build():
        import timm
        import torch
        torch.manual_seed(SEED)
        model = timm.create_model(name, pretrained=False, **kw)
        return model, f"timm.create_model('{name}')", dict(pretrained_cfg=name, **kw)
    return build


def text_in(vocab, seq="seq"):
    return [In("input_ids", "int64", ["batch", seq], high=vocab)]


def image_in(h=224, w=None):
    return [In("pixel_values", "float32", ["batch", 3, h, w or h])]


TEXT_DIMS = {"batch": 1, "seq": 128}
IMG_DIMS = {"batch": 1}

TINYLLAMA = dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_attention_heads=32,
                 num_key_value_heads=4, max_position_embeddings=2048, rms_norm_eps=1e-5, rope_theta=10000.0,
                 tie_word_embeddings=False)


def decode_step_build(builder, layers, note):
    """A causal LM fed one new token plus flat past key/value tensors (built into a DynamicCache inside)."""

    def build():
        import torch
        import transformers
        model, cls, info = builder()

        class DecodeStep(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, input_ids, *past):
                cache = transformers.DynamicCache(
                    ddp_cache_data=[(past[2 * i], past[2 * i + 1]) for i in range(layers)])
                out = self.m(input_ids=input_ids, past_key_values=cache, use_cache=True, return_dict=True)
                pkv = out.past_key_values
                presents = []
                for i in range(layers):
                    presents += [pkv.layers[i].keys, pkv.layers[i].values]
                return (out.logits, *presents)

        return DecodeStep(model), cls, dict(info, decode_step=note)
    return build


llama_decode_build = decode_step_build(
    hf_model("LlamaForCausalLM", "LlamaConfig", num_hidden_layers=2, **TINYLLAMA), 2,
    "1 new token, past_key_values for 127 tokens")


def decode_inputs(layers, kv_heads, head_dim, vocab):
    ins = [In("input_ids", "int64", ["batch", 1], high=vocab)]
    for i in range(layers):
        ins += [In(f"past_key_{i}", "float32", ["batch", kv_heads, "past", head_dim]),
                In(f"past_value_{i}", "float32", ["batch", kv_heads, "past", head_dim])]
    return ins


def decode_outputs(layers):
    outs = ["logits"]
    for i in range(layers):
        outs += [f"present_key_{i}", f"present_value_{i}"]
    return outs


def unet_build(kind):
    def build():
        import diffusers
        import torch
        if kind == "sd":
            cfg = dict(sample_size=64, in_channels=4, out_channels=4, layers_per_block=1,
                       block_out_channels=(320, 640), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                       up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=768,
                       attention_head_dim=8, norm_num_groups=32)
        else:
            cfg = dict(sample_size=32, in_channels=4, out_channels=4, layers_per_block=2,
                       block_out_channels=(32, 64), down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                       up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=32,
                       attention_head_dim=8, norm_num_groups=32)
        torch.manual_seed(SEED)
        unet = diffusers.UNet2DConditionModel(**cfg)

        class UNetStep(torch.nn.Module):
            def __init__(self, u):
                super().__init__()
                self.u = u

            def forward(self, sample, timestep, encoder_hidden_states):
                return (self.u(sample, timestep, encoder_hidden_states, return_dict=False)[0],)

        info = {k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.items()}
        return UNetStep(unet), "diffusers.UNet2DConditionModel", info
    return build


def hf_io(model_builder, argnames, outkeys, ones_mask=False, **kwargs):
    """Wrap a transformers model so that it takes positional tensors and returns a tuple of main outputs.

    ones_mask: pass attention_mask=ones_like(input_ids) built inside the graph (transformers' mask code otherwise
    probes position ids for packed sequences with aten::diff, which the TorchScript exporter cannot export); a
    dict {mask_kwarg: arg_index} does the same for other masks (e.g. decoder_attention_mask)."""

    def build():
        import torch
        model, cls, info = model_builder()

        class Wrap(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, *args):
                kw = dict(zip(argnames, args))
                masks = ones_mask if isinstance(ones_mask, dict) else {"attention_mask": 0} if ones_mask else {}
                for mk, ai in masks.items():
                    kw[mk] = torch.ones_like(args[ai])
                out = self.m(**kw, return_dict=True, **kwargs)
                return tuple(out[k] for k in outkeys)
        return Wrap(model), cls, info
    return build


def plain_io(model_builder, key=None):
    def build():
        import torch
        model, cls, info = model_builder()
        if key is None:
            return model, cls, info

        class Pick(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, x):
                return (self.m(x)[key],)
        return Pick(model), cls, info
    return build


def causal_lm(name, family, exporter, opset, cls, cfg_cls, layers_note=None, real=True, **cfg):
    vocab = cfg["vocab_size"]
    s = Spec(name, family, "transformers", exporter, opset,
             hf_io(hf_model(cls, cfg_cls, **cfg), ["input_ids"], ["logits"], ones_mask=True, use_cache=False),
             text_in(vocab), dict(TEXT_DIMS), ["logits"])
    s.reduced, s.real_config = layers_note, real
    return s


def encoder(name, family, exporter, opset, cls, cfg_cls, vocab, reduced=None, **cfg):
    s = Spec(name, family, "transformers", exporter, opset,
             hf_io(hf_model(cls, cfg_cls, vocab_size=vocab, **cfg), ["input_ids"], ["last_hidden_state"]),
             text_in(vocab), dict(TEXT_DIMS), ["last_hidden_state"])
    s.reduced = reduced
    return s


def vision(name, family, source, exporter, opset, builder, size=224, outputs=("logits",), reduced=None,
           real=True, dims=None):
    s = Spec(name, family, source, exporter, opset, builder, image_in(size) if isinstance(size, int) else
             image_in(*size), dict(dims or IMG_DIMS), list(outputs))
    s.reduced, s.real_config = reduced, real
    return s


def hf_vision(cls, cfg_cls, outkey="logits", **cfg):
    return hf_io(hf_model(cls, cfg_cls, **cfg), ["pixel_values"], [outkey])


SPECS: list[Spec] = []


def add(spec, reduced=None, real=True):
    if not hasattr(spec, "reduced"):
        spec.reduced = reduced
    if not hasattr(spec, "real_config"):
        spec.real_config = real
    SPECS.append(spec)


# ---- decoders (LLaMA family with grouped-query attention and others) ----
add(causal_lm("tinyllama-1.1b-4l", "llama", "torchscript", 17, "LlamaForCausalLM", "LlamaConfig",
              "4 of 22 layers: TinyLlama-1.1B float32 weights are 4.4 GB", num_hidden_layers=4, **TINYLLAMA))
_s = Spec("llama-decode-step", "llama", "transformers", "dynamo", 18, llama_decode_build,
          decode_inputs(2, 4, 64, 32000), {"batch": 1, "past": 127}, decode_outputs(2))
_s.reduced = "2 of 22 layers (TinyLlama-1.1B widths): float32 weights are 4.4 GB; KV-cache decode of 1 token"
add(_s)
add(causal_lm("mistral-7b-2l", "mistral", "dynamo", 18, "MistralForCausalLM", "MistralConfig",
              "2 of 32 layers: Mistral-7B float32 weights are 29 GB",
              vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=2,
              num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=32768, rms_norm_eps=1e-5,
              rope_theta=10000.0, sliding_window=4096, tie_word_embeddings=False))
add(causal_lm("qwen2-0.5b-8l", "qwen2", "torchscript", 17, "Qwen2ForCausalLM", "Qwen2Config",
              "8 of 24 layers: Qwen2-0.5B float32 weights are 2 GB",
              vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=8,
              num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768, rms_norm_eps=1e-6,
              rope_theta=1000000.0, tie_word_embeddings=True))
add(causal_lm("phi3-mini-2l", "phi3", "dynamo", 18, "Phi3ForCausalLM", "Phi3Config",
              "2 of 32 layers: Phi-3-mini float32 weights are 15 GB",
              vocab_size=32064, hidden_size=3072, intermediate_size=8192, num_hidden_layers=2,
              num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096, rms_norm_eps=1e-5,
              rope_theta=10000.0, pad_token_id=32000, tie_word_embeddings=False))
add(causal_lm("gpt2", "gpt2", "torchscript", 14, "GPT2LMHeadModel", "GPT2Config",
              vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12))
_s = Spec("gpt2-decode-step", "gpt2", "transformers", "torchscript", 17,
          decode_step_build(hf_model("GPT2LMHeadModel", "GPT2Config", vocab_size=50257, n_positions=1024, n_embd=768,
                                     n_layer=12, n_head=12), 12, "1 new token, past_key_values for 127 tokens"),
          decode_inputs(12, 12, 64, 50257), {"batch": 1, "past": 127}, decode_outputs(12))
add(_s)
add(causal_lm("pythia-160m", "gpt-neox", "torchscript", 16, "GPTNeoXForCausalLM", "GPTNeoXConfig",
              vocab_size=50304, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
              intermediate_size=3072, rotary_pct=0.25, rotary_emb_base=10000, max_position_embeddings=2048,
              use_parallel_residual=True, tie_word_embeddings=False, layer_norm_eps=1e-5))
add(causal_lm("opt-125m", "opt", "dynamo", 18, "OPTForCausalLM", "OPTConfig",
              vocab_size=50272, hidden_size=768, num_hidden_layers=12, ffn_dim=3072, num_attention_heads=12,
              max_position_embeddings=2048, word_embed_proj_dim=768, do_layer_norm_before=True))
add(causal_lm("phi-1.5-4l", "phi", "torchscript", 17, "PhiForCausalLM", "PhiConfig",
              "4 of 24 layers: phi-1.5 float32 weights are 5.7 GB",
              vocab_size=51200, hidden_size=2048, intermediate_size=8192, num_hidden_layers=4,
              num_attention_heads=32, partial_rotary_factor=0.5, max_position_embeddings=2048,
              layer_norm_eps=1e-5, tie_word_embeddings=False))

# ---- encoders ----
add(encoder("bert-base-uncased", "bert", "torchscript", 14, "BertModel", "BertConfig", 30522))
add(encoder("roberta-base", "roberta", "torchscript", 16, "RobertaModel", "RobertaConfig", 50265,
            max_position_embeddings=514, type_vocab_size=1, pad_token_id=1, layer_norm_eps=1e-5))
add(encoder("distilbert-base-uncased", "distilbert", "torchscript", 14, "DistilBertModel", "DistilBertConfig",
            30522))
add(encoder("deberta-v3-small", "deberta-v2", "torchscript", 17, "DebertaV2Model", "DebertaV2Config", 128100,
            hidden_size=768, num_hidden_layers=6, num_attention_heads=12, intermediate_size=3072,
            max_position_embeddings=512, relative_attention=True, position_buckets=256,
            norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type=["p2c", "c2p"], layer_norm_eps=1e-7,
            max_relative_positions=-1, position_biased_input=False, type_vocab_size=0))
add(encoder("albert-base-v2", "albert", "dynamo", 18, "AlbertModel", "AlbertConfig", 30000,
            embedding_size=128, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
            intermediate_size=3072, hidden_act="gelu_new"))
add(encoder("electra-small-discriminator", "electra", "torchscript", 16, "ElectraModel", "ElectraConfig", 30522,
            embedding_size=128, hidden_size=256, num_hidden_layers=12, num_attention_heads=4,
            intermediate_size=1024))
add(encoder("mobilebert-uncased", "mobilebert", "torchscript", 17, "MobileBertModel", "MobileBertConfig", 30522))

# ---- encoder-decoders and audio ----
_s = Spec("t5-small", "t5", "transformers", "torchscript", 17,
          hf_io(hf_model("T5ForConditionalGeneration", "T5Config", vocab_size=32128, d_model=512, d_kv=64,
                         d_ff=2048, num_layers=6, num_heads=8, relative_attention_num_buckets=32,
                         feed_forward_proj="relu", tie_word_embeddings=True, decoder_start_token_id=0),
                ["input_ids", "decoder_input_ids"], ["logits"], use_cache=False),
          [In("input_ids", "int64", ["batch", "seq"], 32128),
           In("decoder_input_ids", "int64", ["batch", "dec_seq"], 32128)],
          {"batch": 1, "seq": 128, "dec_seq": 128}, ["logits"])
add(_s)
_s = Spec("bart-base", "bart", "transformers", "dynamo", 18,
          hf_io(hf_model("BartForConditionalGeneration", "BartConfig", vocab_size=50265, d_model=768,
                         encoder_layers=6, decoder_layers=6, encoder_attention_heads=12,
                         decoder_attention_heads=12, encoder_ffn_dim=3072, decoder_ffn_dim=3072,
                         max_position_embeddings=1024),
                ["input_ids", "decoder_input_ids"], ["logits"], use_cache=False),
          [In("input_ids", "int64", ["batch", "seq"], 50265),
           In("decoder_input_ids", "int64", ["batch", "dec_seq"], 50265)],
          {"batch": 1, "seq": 128, "dec_seq": 128}, ["logits"])
add(_s)
_s = Spec("whisper-tiny", "whisper", "transformers", "torchscript", 17,
          hf_io(hf_model("WhisperForConditionalGeneration", "WhisperConfig", vocab_size=51865, num_mel_bins=80,
                         encoder_layers=4, encoder_attention_heads=6, decoder_layers=4, decoder_attention_heads=6,
                         d_model=384, encoder_ffn_dim=1536, decoder_ffn_dim=1536, max_source_positions=1500,
                         max_target_positions=448),
                ["input_features", "decoder_input_ids"], ["logits"], ones_mask={"decoder_attention_mask": 1},
                use_cache=False),
          [In("input_features", "float32", ["batch", 80, 3000]),
           In("decoder_input_ids", "int64", ["batch", "dec_seq"], 51865)],
          {"batch": 1, "dec_seq": 128}, ["logits"])
add(_s)
_s = Spec("wav2vec2-base", "wav2vec2", "transformers", "torchscript", 17,
          hf_io(hf_model("Wav2Vec2Model", "Wav2Vec2Config"), ["input_values"], ["last_hidden_state"]),
          [In("input_values", "float32", ["batch", "samples"])], {"batch": 1, "samples": 16000},
          ["last_hidden_state"])
add(_s)

# ---- vision transformers, multimodal, detection, segmentation ----
add(vision("vit-base-patch16-224", "vit", "transformers", "torchscript", 14,
           hf_vision("ViTForImageClassification", "ViTConfig", num_labels=1000)))
add(vision("tv-vit_b_16", "vit", "torchvision", "dynamo", 18, tv_model("vit_b_16")))
add(vision("deit-small-patch16-224", "deit", "transformers", "torchscript", 16,
           hf_vision("DeiTForImageClassification", "DeiTConfig", hidden_size=384, num_hidden_layers=12,
                     num_attention_heads=6, intermediate_size=1536, num_labels=1000)))
add(vision("tv-swin_t", "swin", "torchvision", "torchscript", 17, tv_model("swin_t")))
add(vision("swin-tiny-patch4-window7-224", "swin", "transformers", "dynamo", 18,
           hf_vision("SwinForImageClassification", "SwinConfig", num_labels=1000)))
add(vision("tv-convnext_tiny", "convnext", "torchvision", "torchscript", 16, tv_model("convnext_tiny")))
add(vision("convnext-tiny-224", "convnext", "transformers", "dynamo", 20,
           hf_vision("ConvNextForImageClassification", "ConvNextConfig", num_labels=1000)))
add(vision("mobilevit-small", "mobilevit", "transformers", "torchscript", 17,
           hf_vision("MobileViTForImageClassification", "MobileViTConfig", num_labels=1000), size=256))
_s = Spec("clip-vit-base-patch32", "clip", "transformers", "torchscript", 14,
          hf_io(hf_model("CLIPModel", "CLIPConfig"), ["input_ids", "pixel_values"], ["logits_per_image"]),
          [In("input_ids", "int64", ["text_batch", "text_seq"], 49408),
           In("pixel_values", "float32", ["batch", 3, 224, 224])],
          {"text_batch": 2, "text_seq": 77, "batch": 1}, ["logits_per_image"],
          export_dims={"text_batch": 3, "text_seq": 77, "batch": 2})
add(_s)
add(vision("detr-resnet-50", "detr", "transformers", "torchscript", 17,
           hf_io(hf_model("DetrForObjectDetection", "DetrConfig", use_timm_backbone=False,
                          use_pretrained_backbone=False, num_labels=91), ["pixel_values"],
                 ["logits", "pred_boxes"]), size=(480, 640), outputs=("logits", "pred_boxes"),
           reduced="input 480x640 instead of DETR's ~800x1066 to keep the benchmark affordable"))
add(vision("segformer-b0-512", "segformer", "transformers", "dynamo", 18,
           hf_vision("SegformerForSemanticSegmentation", "SegformerConfig", num_labels=150), size=512))
add(vision("tv-lraspp_mobilenet_v3_large", "tv-segmentation", "torchvision", "torchscript", 16,
           plain_io(tv_model("lraspp_mobilenet_v3_large", weights_backbone=None), "out"), size=512,
           outputs=("out",)))
add(vision("tv-deeplabv3_mobilenet_v3_large", "tv-segmentation", "torchvision", "dynamo", 18,
           plain_io(tv_model("deeplabv3_mobilenet_v3_large", weights_backbone=None, aux_loss=False), "out"),
           size=512, outputs=("out",)))

# ---- CNNs and other vision ----
add(vision("tv-resnet50", "resnet", "torchvision", "torchscript", 14, tv_model("resnet50")))
add(vision("timm-resnet18", "resnet", "timm", "dynamo", 18, timm_model("resnet18")))
add(vision("tv-efficientnet_b0", "efficientnet", "torchvision", "torchscript", 14, tv_model("efficientnet_b0")))
add(vision("timm-efficientnet_b0", "efficientnet", "timm", "dynamo", 18, timm_model("efficientnet_b0")))
add(vision("tv-mobilenet_v3_large", "mobilenetv3", "torchvision", "torchscript", 16,
           tv_model("mobilenet_v3_large")))
add(vision("timm-mobilenetv3_small_100", "mobilenetv3", "timm", "dynamo", 20, timm_model("mobilenetv3_small_100")))
add(vision("tv-regnet_y_400mf", "regnet", "torchvision", "dynamo", 18, tv_model("regnet_y_400mf")))
add(vision("tv-densenet121", "densenet", "torchvision", "torchscript", 14, tv_model("densenet121")))
add(vision("timm-levit_128s", "levit", "timm", "torchscript", 17, timm_model("levit_128s")))
add(vision("timm-efficientformer_l1", "efficientformer", "timm", "torchscript", 16,
           timm_model("efficientformer_l1")))
add(vision("timm-mixer_b16_224", "mlp-mixer", "timm", "torchscript", 17, timm_model("mixer_b16_224")))

# ---- diffusion UNet ----
_s = Spec("unet2d-sd15-2level", "unet2d", "diffusers", "dynamo", 18, unet_build("sd"),
          [In("sample", "float32", ["batch", 4, 64, 64]), In("timestep", "float32", []),
           In("encoder_hidden_states", "float32", ["batch", 77, 768])], {"batch": 1}, ["noise_pred"])
_s.reduced = ("2 of 4 resolution levels and 1 of 2 layers per block at Stable Diffusion 1.5 widths (320/640 "
              "channels, cross-attention 768, 64x64 latent): the full UNet is 3.4 GB float32")
add(_s)
_s = Spec("unet2d-tiny", "unet2d", "diffusers", "torchscript", 17, unet_build("tiny"),
          [In("sample", "float32", ["batch", 4, 32, 32]), In("timestep", "float32", []),
           In("encoder_hidden_states", "float32", ["batch", 77, 32])], {"batch": 1}, ["noise_pred"])
_s.real_config = False
_s.reduced = "tiny test configuration (channels 32/64, cross-attention 32): no real checkpoint has it"
add(_s)

SPEC_BY_NAME = {s.name: s for s in SPECS}

# --------------------------------------------------------------------------------------------------------------
# Export, stripping and checks (run in a worker subprocess, one model each)
# --------------------------------------------------------------------------------------------------------------


def example_inputs(spec, dims):
    import torch
    g = torch.Generator().manual_seed(SEED)
    out = []
    for i in spec.inputs:
        shape = [dims[d] if isinstance(d, str) else d for d in i.shape]
        if i.dtype == "int64":
            out.append(torch.randint(0, i.high, shape, generator=g, dtype=torch.int64))
        elif i.name == "timestep":
            out.append(torch.tensor(500.0))
        else:
            out.append(torch.randn(shape, generator=g, dtype=torch.float32))
    return tuple(out)


def export(spec, model, path):
    import torch
    args = example_inputs(spec, spec.export_dims)
    in_names = [i.name for i in spec.inputs]
    if spec.exporter == "torchscript":
        dyn = {}
        if spec.dynamic:
            for i in spec.inputs:
                axes = {a: d for a, d in enumerate(i.shape) if isinstance(d, str)}
                if axes:
                    dyn[i.name] = axes
        torch.onnx.export(model, args, str(path), dynamo=False, opset_version=spec.opset, input_names=in_names,
                          output_names=spec.outputs, dynamic_axes=dyn or None, do_constant_folding=True)
    else:
        dyn = None
        if spec.dynamic:
            dyn = [{a: torch.export.Dim.AUTO for a, d in enumerate(i.shape) if isinstance(d, str)} or None
                   for i in spec.inputs]
            # a forward(*args) / forward(x, *rest) signature takes the var-positional part as one nested tuple
            params = list(inspect.signature(model.forward).parameters.values())
            nfixed = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
            if any(p.kind == p.VAR_POSITIONAL for p in params):
                dyn = dyn[:nfixed] + [tuple(dyn[nfixed:])]
            dyn = tuple(dyn)
        prog = torch.onnx.export(model, args, dynamo=True, opset_version=spec.opset, input_names=in_names,
                                 output_names=spec.outputs, dynamic_shapes=dyn)
        prog.save(str(path), external_data=True)


def count_nodes(graph):
    n = 0
    for node in graph.node:
        n += 1
        for a in node.attribute:
            if a.g is not None and a.HasField("g"):
                n += count_nodes(a.g)
            for sg in a.graphs:
                n += count_nodes(sg)
    return n


def rename_dims(model, spec):
    """Give symbolic dims the names of the spec (dynamo calls them s0, s1, ...); report which stayed symbolic."""
    g = model.graph
    mapping = {}
    by_name = {vi.name: vi for vi in g.input}
    for i in spec.inputs:
        vi = by_name.get(i.name)
        if vi is None:
            continue
        for a, want in enumerate(i.shape):
            if not isinstance(want, str):
                continue
            d = vi.type.tensor_type.shape.dim[a]
            if d.HasField("dim_param") and d.dim_param != want and d.dim_param not in mapping:
                mapping[d.dim_param] = want
    if mapping:
        pat = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True)) + r")\b")
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            if not vi.type.HasField("tensor_type"):
                continue
            for d in vi.type.tensor_type.shape.dim:
                if d.HasField("dim_param"):
                    d.dim_param = pat.sub(lambda m: mapping[m.group(1)], d.dim_param)
    symbolic = set()
    for vi in g.input:
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param"):
                symbolic.add(d.dim_param)
    return symbolic


def constants_to_initializers(model):
    import onnx
    from onnx import numpy_helper
    g = model.graph
    keep = []
    moved = 0
    for node in g.node:
        if node.op_type == "Constant" and len(node.attribute) == 1 and node.attribute[0].name == "value":
            t = node.attribute[0].t
            n = 1
            for d in t.dims:
                n *= d
            if t.data_type == onnx.TensorProto.FLOAT and n > SEEDED_MIN_ELEMENTS:
                arr = numpy_helper.to_array(t)
                g.initializer.append(numpy_helper.from_array(arr, node.output[0]))
                moved += 1
                continue
        keep.append(node)
    if moved:
        del g.node[:]
        g.node.extend(keep)
    return moved


def strip_weights(model):
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper
    g = model.graph
    seeded = {}
    keep = []
    new_inputs = []
    existing_inputs = {i.name for i in g.input}
    for init in g.initializer:
        n = 1
        for d in init.dims:
            n *= d
        if init.data_type == onnx.TensorProto.FLOAT and n > SEEDED_MIN_ELEMENTS:
            arr = numpy_helper.to_array(init)
            lo, hi = float(arr.min()), float(arr.max())
            if not np.isfinite(lo) or not np.isfinite(hi):
                raise ValueError(f"non-finite initializer {init.name}")
            if hi <= lo:
                hi = lo + 1e-6
            seeded[init.name] = {"low": lo, "high": hi}
            if init.name not in existing_inputs:
                new_inputs.append(helper.make_tensor_value_info(init.name, onnx.TensorProto.FLOAT, list(init.dims)))
        else:
            keep.append(init)
    del g.initializer[:]
    g.initializer.extend(keep)
    g.input.extend(new_inputs)
    for p in list(model.metadata_props):
        if p.key == "saturn.seeded_weights":
            model.metadata_props.remove(p)
    entry = model.metadata_props.add()
    entry.key = "saturn.seeded_weights"
    entry.value = json.dumps(seeded, sort_keys=True)
    return seeded


def run_materialized(model, spec, seeded, workdir):
    """Fill seeded inputs with uniform random values as initializers, run once in onnxruntime at spec.dims."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
    rng = np.random.default_rng(SEED)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    keep = [i for i in g.input if i.name not in seeded]
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in g.input if i.name in seeded}
    del g.input[:]
    g.input.extend(keep)
    for name, r in seeded.items():
        arr = (r["low"] + (r["high"] - r["low"]) * rng.random(shapes[name], dtype=np.float32)).astype(np.float32)
        g.initializer.append(numpy_helper.from_array(arr, name))
        del arr
    p = Path(workdir) / "materialized.onnx"
    onnx.save(m, str(p), save_as_external_data=True, all_tensors_to_one_file=True, location="materialized.data",
              size_threshold=1024)
    del m
    gc.collect()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(str(p), so, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in spec.inputs:
        shape = [spec.dims[d] if isinstance(d, str) else d for d in i.shape]
        if i.dtype == "int64":
            feeds[i.name] = rng.integers(0, i.high, shape, dtype=np.int64)
        elif i.name == "timestep":
            feeds[i.name] = np.array(500.0, dtype=np.float32)
        else:
            feeds[i.name] = rng.standard_normal(shape, dtype=np.float32)
    t0 = time.time()
    outs = sess.run(None, feeds)
    dt = time.time() - t0
    finite = all(bool(np.isfinite(o).all()) for o in outs)
    shapes = [list(o.shape) for o in outs]
    return finite, dt, shapes


def io_desc(model, seeded):
    import onnx
    out = []
    for vi in model.graph.input:
        if vi.name in seeded:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_param if d.HasField("dim_param") else d.dim_value for d in tt.shape.dim]
        out.append({"name": vi.name, "dtype": onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type).name,
                    "shape": shape})
    return out


def worker(name, result_path):
    import numpy as np  # noqa: F401
    import onnx
    import onnxruntime as ort
    import torch
    torch.set_num_threads(1)
    spec = SPEC_BY_NAME[name]
    res = {"name": name, "ok": False}
    t_start = time.time()
    try:
        with tempfile.TemporaryDirectory(prefix=f"corpus-{name}-") as tmp:
            model, cls, info = spec.build()
            model.eval()
            for p in model.parameters():
                p.requires_grad_(False)
            raw = Path(tmp) / "raw.onnx"
            t0 = time.time()
            with torch.no_grad():
                export(spec, model, raw)
            export_s = time.time() - t0
            del model
            gc.collect()
            m = onnx.load(str(raw), load_external_data=True)
            moved = constants_to_initializers(m)
            symbolic = rename_dims(m, spec)
            seeded = strip_weights(m)
            for f in Path(tmp).iterdir():
                f.unlink()
            MODELS_DIR.mkdir(parents=True, exist_ok=True)
            dst = MODELS_DIR / f"{name}.onnx"
            onnx.save(m, str(dst))
            check = True
            try:
                onnx.checker.check_model(onnx.load(str(dst)), full_check=True)
            except Exception as e:  # record it, fall back to the plain check
                check = f"full_check failed: {str(e).splitlines()[0][:300]}"
                onnx.checker.check_model(onnx.load(str(dst)))
            ort.InferenceSession(str(dst), providers=["CPUExecutionProvider"])
            finite, run_s, out_shapes = run_materialized(m, spec, seeded, tmp)
            dims = {d: v for d, v in spec.dims.items() if d in symbolic}
            ins = io_desc(m, seeded)
            int_high = {i.name: i.high for i in spec.inputs if i.dtype == "int64"}
            res.update(
                ok=True, cls=cls, config=info, opset=max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")),
                inputs=ins, dims=dims, int_input_high=int_high, ops=count_nodes(m.graph),
                file_bytes=dst.stat().st_size, seeded_weights=len(seeded),
                seeded_elements=int(sum(np.prod([d.dim_value for d in i.type.tensor_type.shape.dim])
                                        for i in m.graph.input if i.name in seeded)),
                constants_moved=moved, full_check=check, finite=finite, export_seconds=round(export_s, 1),
                ort_run_seconds=round(run_s, 3), output_shapes=out_shapes, outputs=[o.name for o in m.graph.output])
    except Exception as e:
        res["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:400] if str(e).strip() else ''}"
        traceback.print_exc()
    res["seconds"] = round(time.time() - t_start, 1)
    Path(result_path).write_text(json.dumps(res))


# --------------------------------------------------------------------------------------------------------------
# Driver: manifest and README
# --------------------------------------------------------------------------------------------------------------


def versions():
    v = {"python": platform.python_version()}
    for p in ["torch", "torchvision", "transformers", "timm", "diffusers", "onnx", "onnxscript", "onnxruntime",
              "numpy", "accelerate"]:
        try:
            v[p] = md.version(p)
        except md.PackageNotFoundError:
            v[p] = None
    return v


def entry(spec, res):
    return {
        "name": spec.name, "family": spec.family, "source": spec.source, "class": res["cls"],
        "config": res["config"], "real_config": spec.real_config, "reduced": spec.reduced,
        "exporter": spec.exporter, "opset": res["opset"], "inputs": res["inputs"], "outputs": res["outputs"],
        "dims": res["dims"], "int_input_high": res["int_input_high"],
        "part": "held-out" if spec.family in HELD_OUT_FAMILIES else "tuning",
        "ops": res["ops"], "file_bytes": res["file_bytes"], "seeded_weights": res["seeded_weights"],
        "seeded_elements": res["seeded_elements"], "finite": res["finite"], "full_check": res["full_check"],
        "export_seconds": res["export_seconds"], "ort_run_seconds": res["ort_run_seconds"],
        "output_shapes": res["output_shapes"],
    }


def write_readme(man):
    ms = man["models"]
    fams = sorted({m["family"] for m in ms})
    tuning = sorted({m["family"] for m in ms if m["part"] == "tuning"})
    held = sorted({m["family"] for m in ms if m["part"] == "held-out"})
    n_dyn = sum(m["exporter"] == "dynamo" for m in ms)
    total = sum(m["file_bytes"] for m in ms)
    L = []
    L.append("# saturn model corpus\n")
    L.append("Real-architecture ONNX graphs for developing and benchmarking saturn: decoders (LLaMA-family with "
             "grouped-query attention, a KV-cache decode step, GPT-2, GPT-NeoX, OPT, Phi), encoders, "
             "encoder-decoders, audio, vision transformers, detection/segmentation, CNNs and a diffusion UNet. "
             "Every model is built from a configuration (no downloaded checkpoints), exported with PyTorch's "
             "TorchScript or dynamo ONNX exporter and stripped of its weights: each float32 initializer with more "
             f"than {SEEDED_MIN_ELEMENTS} elements became a graph input of the same name, type and shape, and the "
             "metadata entry `saturn.seeded_weights` maps its name to `{\"low\": L, \"high\": H}`, the range of the "
             "original tensor. A runner materializes those inputs with uniform random values in [L, H). "
             "`manifest.json` describes every model: class, key config numbers, what was reduced and why, exporter, "
             "opset, inputs with symbolic dims, `dims` (sizes to give each symbolic dimension), `int_input_high` "
             "(exclusive upper bound of valid integer input values; 0..9 is always valid), node count, size, "
             "whether the materialized model's outputs were finite in onnxruntime, and the tuning/held-out part.\n")
    L.append("Conventions: symbolic batch/sequence dims are named `batch`, `seq`, `dec_seq`, `past` (KV-cache "
             "length of the decode steps, which take 1 new token), `text_batch`/`text_seq` (CLIP), `samples` "
             "(wav2vec2); image height/width are static. Integer inputs are token ids; float inputs (pixels, mel "
             "features, audio, latents, past keys/values) are fed standard-normal values; the UNet's `timestep` is "
             "a float32 scalar (500 in the checks). Decoders build their attention mask inside the graph as "
             "ones_like(input_ids), so no mask input exists (without a mask, transformers 5 probes the position ids for "
             "packed sequences with aten::diff, which the TorchScript exporter cannot export; whisper-tiny does the "
             "same for its decoder mask). `real_config: true` means the widths, heads, KV heads, "
             "vocabulary and image size are those of the named checkpoint; `reduced` says what was cut (usually "
             "layers) and why. `ops` counts nodes including subgraphs. Dynamo exports keep per-node metadata "
             "(source stack traces), which makes them larger per node than TorchScript exports.\n")
    L.append("Checks done by generate.py for every model: `onnx.checker.check_model(full_check=True)` on the "
             "stripped file, an onnxruntime load of it, and one onnxruntime run of the materialized model (seeded "
             "inputs filled uniformly in [low, high) as initializers, symbolic dims at `dims`) whose outputs must "
             "be finite (recorded as `finite`).\n")
    L.append(f"{len(ms)} models, {len(fams)} families, {n_dyn} exported with the dynamo exporter, "
             f"{len(ms) - n_dyn} with the TorchScript exporter; models/ totals {total / 1e6:.1f} MB.\n")
    L.append("## Regenerate\n")
    L.append("From the repository root (about 20-25 minutes on 2 cores; models are exported one at a time, each in its own subprocess):\n")
    L.append("```sh\n/usr/bin/python3 -m venv build/corpus-venv\n"
             "build/corpus-venv/bin/pip install -r bench/corpus/requirements.txt\n"
             f"{GENERATOR}                 # all models\n"
             f"{GENERATOR} --only gpt2 t5-small   # just these; the others keep their manifest entries\n```\n")
    L.append(f"Versions: " + ", ".join(f"{k} {v}" for k, v in man["versions"].items()) + f"; seed {man['seed']}.\n")
    L.append("## Split\n")
    L.append("Families are split once, by the fixed list `HELD_OUT_FAMILIES` in generate.py (about a third of the "
             "families; both parts hold decoders, encoders, encoder-decoder/audio, vision transformers and CNNs). "
             "All models of a family are in the same part. **Rewrite rules, canonical forms and cost-model decisions "
             "are developed and tuned on the tuning part only; the held-out part is only ever reported**, never "
             "used to choose or adjust anything.\n")
    L.append(f"- tuning ({len(tuning)} families, {sum(m['part'] == 'tuning' for m in ms)} models): "
             + ", ".join(tuning))
    L.append(f"- held-out ({len(held)} families, {sum(m['part'] == 'held-out' for m in ms)} models): "
             + ", ".join(held) + "\n")
    L.append("## Models\n")
    L.append("| name | family | source | exporter | opset | part | ops | KB | reduced |")
    L.append("| --- | --- | --- | --- | --- | --- | ---: | ---: | --- |")
    for m in ms:
        red = m["reduced"] or ("not a real config" if not m["real_config"] else "")
        fin = "" if m["finite"] else " **outputs not finite with uniform random weights**"
        L.append(f"| {m['name']} | {m['family']} | {m['source']} | {m['exporter']} | {m['opset']} | {m['part']} | "
                 f"{m['ops']} | {m['file_bytes'] // 1024} | {red}{fin} |")
    L.append("")
    notes = [m for m in ms if m["full_check"] is not True]
    if notes:
        L.append("onnx full_check failures (the plain checker passes):\n")
        for m in notes:
            L.append(f"- {m['name']}: {m['full_check']}")
        L.append("")
    if man.get("failed"):
        L.append("## Tried, failed\n")
        for f in man["failed"]:
            L.append(f"- {f['name']} ({f['family']}, {f['exporter']}): {f['error']}")
        L.append("")
    README.write_text("\n".join(L))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", help="regenerate only these models")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per model")
    ap.add_argument("--docs-only", action="store_true", help="only rewrite manifest.json and README.md")
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.result)
        return
    names = [] if a.docs_only else a.only or [s.name for s in SPECS]
    unknown = [n for n in names if n not in SPEC_BY_NAME]
    if unknown:
        sys.exit(f"unknown model(s): {unknown}")
    old = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}
    entries = {m["name"]: m for m in old.get("models", [])}
    failed = {f["name"]: f for f in old.get("failed", [])}
    for n in names:
        spec = SPEC_BY_NAME[n]
        print(f"=== {n} ({spec.exporter})", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            rp = Path(tmp) / "res.json"
            env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
            try:
                subprocess.run([sys.executable, __file__, "--worker", n, "--result", str(rp)], env=env,
                               timeout=a.timeout, check=False)
                res = json.loads(rp.read_text()) if rp.exists() else {"ok": False, "error": "worker crashed"}
            except subprocess.TimeoutExpired:
                res = {"ok": False, "error": f"timeout after {a.timeout} s"}
        if res["ok"]:
            entries[n] = entry(spec, res)
            failed.pop(n, None)
            print(f"    ok: {res['ops']} nodes, {res['file_bytes'] / 1e3:.0f} KB, {res['seeded_weights']} seeded, "
                  f"finite={res['finite']}, dims={res['dims']}, {res['seconds']} s", flush=True)
        else:
            entries.pop(n, None)
            (MODELS_DIR / f"{n}.onnx").unlink(missing_ok=True)
            failed[n] = {"name": n, "family": spec.family, "exporter": spec.exporter, "error": res["error"]}
            print(f"    FAILED: {res['error']}", flush=True)
    order = {s.name: i for i, s in enumerate(SPECS)}
    man = {
        "generator": GENERATOR,
        "versions": versions(),
        "seed": SEED,
        "seeded_min_elements": SEEDED_MIN_ELEMENTS,
        "held_out_families": sorted(HELD_OUT_FAMILIES),
        "models": sorted((e for k, e in entries.items() if k in order), key=lambda e: order[e["name"]]),
        "failed": sorted((f for k, f in failed.items() if k in order), key=lambda f: order[f["name"]]),
    }
    MANIFEST.write_text(json.dumps(man, indent=1) + "\n")
    write_readme(man)
    print(f"{len(man['models'])} models, {len(man['failed'])} failed")


if __name__ == "__main__":
    main()
