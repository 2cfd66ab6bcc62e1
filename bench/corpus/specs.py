"""The model specifications of saturn's corpus: which models, their configs, wrappers and inputs, and the split.

generate.py (the driver: export, weight stripping, checks, manifest.json and README.md) imports SPECS, SPEC_BY_NAME,
SEED and HELD_OUT_FAMILIES from here. Every builder constructs its network from a config (no hub access) with random
weights from torch.manual_seed(SEED); torch, transformers, torchvision, timm and diffusers are only imported when a
builder runs, so importing this module is cheap.
"""
from __future__ import annotations

from pathlib import Path

SEED = 20260101

# Families held out from all tuning work (chosen once, by hand, so that both parts contain decoders, encoders,
# encoder-decoders/audio, vision transformers and CNNs). Rules, canonical forms and cost-model decisions are
# developed on the "tuning" part only; the "held-out" part is only ever reported.
HELD_OUT_FAMILIES = {
    "qwen2", "gpt-neox", "phi",              # decoders
    "roberta", "deberta-v2", "electra",      # encoders
    "bart", "wav2vec2",                      # encoder-decoder / audio
    "deit", "mobilevit", "segformer",        # vision transformers / segmentation
    "ppocr",                                 # exported by paddle2onnx
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
                 dynamic=True, fetch=None):
        # `fetch(folder)`, where given, returns an ONNX model someone else exported (onnx.ModelProto, class,
        # info) in place of `build`'s torch module.
        self.fetch = fetch
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


def yolo_model():
    def build():
        import torch
        import yolo_style
        torch.manual_seed(SEED)
        return yolo_style.build()
    return build


def pypi_onnx(package, version, member, input_dims=None):
    """A fetch for an ONNX file a PyPI package ships, read from its wheel at a pinned version (pip download, no
    install). `input_dims` names or sizes the input axes its exporter left unnamed (or wrote as -1):
    {input: {axis: name or size}}."""

    def fetch(folder):
        import subprocess
        import sys
        import zipfile

        import onnx
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", str(folder),
                        f"{package}=={version}"], check=True)
        wheel = next(p for p in Path(folder).iterdir() if p.suffix == ".whl")
        with zipfile.ZipFile(wheel) as z:
            model = onnx.load_from_string(z.read(member))
        wheel.unlink()
        for vi in model.graph.input:
            for axis, size in (input_dims or {}).get(vi.name, {}).items():
                d = vi.type.tensor_type.shape.dim[axis]
                d.Clear()
                if isinstance(size, str):
                    d.dim_param = size
                else:
                    d.dim_value = size
        return model, f"{package}=={version}:{member}", {"producer": f"{model.producer_name} {model.producer_version}".strip()}

    return fetch


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


def seq2seq(name, family, exporter, opset, cls, cfg_cls, vocab, **cfg):
    """A transformers encoder-decoder fed input_ids and decoder_input_ids (both token ids below vocab)."""
    return Spec(name, family, "transformers", exporter, opset,
                hf_io(hf_model(cls, cfg_cls, vocab_size=vocab, **cfg), ["input_ids", "decoder_input_ids"],
                      ["logits"], use_cache=False),
                text_in(vocab) + [In("decoder_input_ids", "int64", ["batch", "dec_seq"], vocab)],
                dict(TEXT_DIMS, dec_seq=128), ["logits"])


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
# XLNet-base: two-stream relative attention written as Einsum (15 equations), sequence-first.
add(encoder("xlnet-base-cased", "xlnet", "torchscript", 17, "XLNetModel", "XLNetConfig", 32000,
            d_model=768, n_layer=12, n_head=12, d_inner=3072))
add(encoder("mobilebert-uncased", "mobilebert", "torchscript", 17, "MobileBertModel", "MobileBertConfig", 30522))

# ---- encoder-decoders and audio ----
add(seq2seq("t5-small", "t5", "torchscript", 17, "T5ForConditionalGeneration", "T5Config", 32128,
            d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_heads=8, relative_attention_num_buckets=32,
            feed_forward_proj="relu", tie_word_embeddings=True, decoder_start_token_id=0))
add(seq2seq("bart-base", "bart", "dynamo", 18, "BartForConditionalGeneration", "BartConfig", 50265,
            d_model=768, encoder_layers=6, decoder_layers=6, encoder_attention_heads=12,
            decoder_attention_heads=12, encoder_ffn_dim=3072, decoder_ffn_dim=3072, max_position_embeddings=1024))
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
# BEiT-base as microsoft/beit-base-patch16-224 configures it: a relative position bias per layer,
# whose index table TorchScript writes with ScatterND.
add(vision("beit-base-patch16-224", "beit", "transformers", "torchscript", 17,
           hf_vision("BeitForImageClassification", "BeitConfig", use_relative_position_bias=True,
                     use_mean_pooling=True, layer_scale_init_value=0.1, num_labels=1000)))
# DINOv2-small as facebook/dinov2-small configures it: its position table is for 518x518 images, so at 224x224
# the export interpolates it (bicubic Resize to sizes computed from the image's).
add(vision("dinov2-small", "dinov2", "transformers", "torchscript", 17,
           hf_vision("Dinov2Model", "Dinov2Config", outkey="last_hidden_state", hidden_size=384,
                     num_hidden_layers=12, num_attention_heads=6, intermediate_size=1536, patch_size=14,
                     image_size=518), outputs=("last_hidden_state",)))
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
# RT-DETR (ResNet-50-vd backbone, as RTDetrConfig's defaults): its encoder picks its 300 queries by TopK
# and gathers them (GatherElements); its decoder samples by GridSample.
add(vision("rtdetr-r50", "rt-detr", "transformers", "torchscript", 17,
           hf_io(hf_model("RTDetrForObjectDetection", "RTDetrConfig", use_pretrained_backbone=False),
                 ["pixel_values"], ["logits", "pred_boxes"]), size=640, outputs=("logits", "pred_boxes")))
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
add(vision("tv-maxvit_t", "maxvit", "torchvision", "dynamo", 21, tv_model("maxvit_t")))
add(vision("yolo-style-n-640", "yolo", "own", "dynamo", 18, yolo_model(), size=640,
           outputs=("detections",), real=False,
           reduced="YOLOv8-n layout written for the corpus (no detector package is a dependency)"))
add(vision("timm-levit_128s", "levit", "timm", "torchscript", 17, timm_model("levit_128s")))
# The same network from the dynamo exporter, which writes its Linear +
# BatchNorm1d with a Reshape to [-1, C] where TorchScript writes a Flatten:
# one model, one result, whichever exporter.
add(vision("timm-levit_128s-dynamo", "levit", "timm", "dynamo", 18, timm_model("levit_128s")))
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

# ---- exported by other tools, as packages ship them ----
# PaddleOCR's PP-OCRv4 text recognizer and its direction classifier, exported by paddle2onnx, as the
# rapidocr_onnxruntime package ships them (its weights stripped as every model's).
_RAPIDOCR = ("rapidocr_onnxruntime", "1.4.4")
_s = Spec("ppocr-v4-rec", "ppocr", "pypi", "paddle2onnx", 12, None,
          [In("x", "float32", ["batch", 3, 48, "width"])], {"batch": 1, "width": 320}, ["softmax_11.tmp_0"],
          fetch=pypi_onnx(*_RAPIDOCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                          {"x": {0: "batch", 2: 48, 3: "width"}}))
add(_s)
_s = Spec("ppocr-mobile-v2-cls", "ppocr", "pypi", "paddle2onnx", 11, None,
          [In("x", "float32", ["batch", 3, 48, 192])], {"batch": 1}, ["save_infer_model/scale_0.tmp_1"],
          fetch=pypi_onnx(*_RAPIDOCR, "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                          {"x": {0: "batch", 2: 48, 3: 192}}))
add(_s)

SPEC_BY_NAME = {s.name: s for s in SPECS}
