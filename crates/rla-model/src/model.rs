//! A decoder-only transformer of the Llama / Qwen2 / Qwen3 architectures, written only with candle ops
//! that carry gradients: a plain RMSNorm, a plain rotary embedding (rotate-half), `exp`/`sum`
//! softmax, grouped-query attention, SwiGLU, optional q/k/v biases (Qwen2), per-head q/k norms
//! (Qwen3), scaled rotary frequencies (Llama 3), tied or untied embeddings, and optional LoRA adapters on every projection.

use crate::config::{Arch, ModelConfig};
use crate::fused::{self, rms_norm};
use crate::ops::Result;
use crate::ModelError;
use candle_core::{DType, Device, Tensor, Var, D};
use std::collections::BTreeMap;

/// A LoRA adapter `W + (α/r)·B·A` on one projection.
#[derive(Debug, Clone)]
pub struct Lora {
    /// `A`: `[r, in]`.
    pub a: Tensor,
    /// `B`: `[out, r]`, zero at initialisation.
    pub b: Tensor,
    /// `α / r`.
    pub scale: f64,
}

/// A linear projection `y = x·Wᵀ + b`, with an optional LoRA adapter.
#[derive(Debug, Clone)]
pub struct Linear {
    /// `[out, in]`.
    pub w: Tensor,
    /// `[out]`.
    pub b: Option<Tensor>,
    /// Adapter, if any.
    pub lora: Option<Lora>,
}

impl Linear {
    /// Applies the projection to `[…, in]`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if x.rank() == 2 {
            return self.forward_2d(x);
        }
        // One 2-D product over all leading positions: a single large GEMM (and a single weight
        // gradient) instead of one small product per batch row.
        let mut out_shape = x.dims().to_vec();
        let inner = out_shape.pop().unwrap_or(1);
        let y = self.forward_2d(&x.reshape(((), inner))?)?;
        out_shape.push(y.dim(1)?);
        y.reshape(out_shape)
    }

    /// The projection of rows `[N, in]`.
    fn forward_2d(&self, x: &Tensor) -> Result<Tensor> {
        let mut y = fused::linear(x, &self.w)?;
        if let Some(b) = &self.b {
            y = y.broadcast_add(b)?;
        }
        if let Some(l) = &self.lora {
            let d = x.matmul(&l.a.t()?)?.matmul(&l.b.t()?)?;
            y = (y + (d * l.scale)?)?;
        }
        Ok(y)
    }
}

/// One transformer block.
#[derive(Debug, Clone)]
pub struct Block {
    /// Projections.
    pub q: Linear,
    /// .
    pub k: Linear,
    /// .
    pub v: Linear,
    /// .
    pub o: Linear,
    /// Qwen3's per-head norms.
    pub q_norm: Option<Tensor>,
    /// .
    pub k_norm: Option<Tensor>,
    /// SwiGLU.
    pub gate: Linear,
    /// .
    pub up: Linear,
    /// .
    pub down: Linear,
    /// Pre-attention norm.
    pub ln1: Tensor,
    /// Pre-MLP norm.
    pub ln2: Tensor,
}

/// Cached keys and values of every block, `[B, kv_heads, S, head_dim]`.
#[derive(Debug, Default)]
pub struct KvCache {
    /// Per block.
    pub layers: Vec<Option<(Tensor, Tensor)>>,
    /// Per block, storage with room for more positions ([`KvCache::reserve`]): `layers` are then
    /// views of its first S positions, and new keys are written in place instead of copying the
    /// whole cache at every decoding step.
    room: Vec<Option<(Tensor, Tensor)>>,
}

impl Clone for KvCache {
    /// A clone shares the cached tensors but not the room to write into: its appends copy.
    fn clone(&self) -> Self {
        KvCache {
            layers: self.layers.clone(),
            room: vec![],
        }
    }
}

impl KvCache {
    /// Cached length.
    pub fn len(&self) -> usize {
        self.layers
            .first()
            .and_then(|l| l.as_ref())
            .map(|(k, _)| k.dim(2).unwrap_or(0))
            .unwrap_or(0)
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The cache left-padded with zeros to `len` positions (the padding must be masked).
    pub fn left_padded(&self, len: usize) -> Result<KvCache> {
        let mut out = Vec::with_capacity(self.layers.len());
        for l in &self.layers {
            out.push(match l {
                Some((k, v)) if k.dim(2)? < len => {
                    let (b, h, s, d) = k.dims4()?;
                    let z = Tensor::zeros((b, h, len - s, d), k.dtype(), k.device())?;
                    Some((Tensor::cat(&[&z, k], 2)?, Tensor::cat(&[&z, v], 2)?))
                }
                other => other.clone(),
            });
        }
        Ok(KvCache {
            layers: out,
            room: vec![],
        })
    }

    /// The rows of several caches of equal length, one after another.
    pub fn cat(parts: &[KvCache]) -> Result<KvCache> {
        let Some(first) = parts.first() else {
            return Ok(KvCache::default());
        };
        let mut out = Vec::with_capacity(first.layers.len());
        for i in 0..first.layers.len() {
            let (mut ks, mut vs) = (vec![], vec![]);
            for p in parts {
                match p.layers.get(i) {
                    Some(Some((k, v))) => {
                        ks.push(k.clone());
                        vs.push(v.clone());
                    }
                    _ => candle_core::bail!("caches of different depths"),
                }
            }
            out.push(Some((Tensor::cat(&ks, 0)?, Tensor::cat(&vs, 0)?)));
        }
        Ok(KvCache {
            layers: out,
            room: vec![],
        })
    }

    /// Keeps the rows `idx` (in that order, repeats allowed): m samples share one prefill.
    pub fn select_rows(&self, idx: &[u32]) -> Result<KvCache> {
        let mut out = Vec::with_capacity(self.layers.len());
        for l in &self.layers {
            out.push(match l {
                Some((k, v)) => {
                    let i = Tensor::new(idx, k.device())?;
                    Some((
                        k.contiguous()?.index_select(&i, 0)?,
                        v.contiguous()?.index_select(&i, 0)?,
                    ))
                }
                None => None,
            });
        }
        Ok(KvCache {
            layers: out,
            room: vec![],
        })
    }

    /// Makes room for `extra` more positions in every block: appends then write in place.
    pub fn reserve(&mut self, extra: usize) -> Result<()> {
        self.room = Vec::with_capacity(self.layers.len());
        for l in self.layers.iter_mut() {
            let Some((k, v)) = l else {
                self.room.push(None);
                continue;
            };
            let (b, h, s, d) = k.dims4()?;
            let kb = Tensor::zeros((b, h, s + extra, d), k.dtype(), k.device())?;
            let vb = Tensor::zeros((b, h, s + extra, d), v.dtype(), v.device())?;
            kb.slice_set(&k.contiguous()?, 2, 0)?;
            vb.slice_set(&v.contiguous()?, 2, 0)?;
            *l = Some((kb.narrow(2, 0, s)?, vb.narrow(2, 0, s)?));
            self.room.push(Some((kb, vb)));
        }
        Ok(())
    }

    /// Appends keys and values `[B, kv_heads, T, head_dim]` to block `i`, in place where there is
    /// room, and returns the block's keys and values.
    fn append(&mut self, i: usize, k: Tensor, v: Tensor) -> Result<(Tensor, Tensor)> {
        let kv = match (&self.layers[i], self.room.get(i).and_then(|r| r.as_ref())) {
            (Some((pk, _)), Some((kb, vb)))
                if pk.dim(2)? + k.dim(2)? <= kb.dim(2)? && kb.dim(0)? == k.dim(0)? =>
            {
                let (s, t) = (pk.dim(2)?, k.dim(2)?);
                kb.slice_set(&k.contiguous()?, 2, s)?;
                vb.slice_set(&v.contiguous()?, 2, s)?;
                (kb.narrow(2, 0, s + t)?, vb.narrow(2, 0, s + t)?)
            }
            (Some((pk, pv)), _) => (Tensor::cat(&[pk, &k], 2)?, Tensor::cat(&[pv, &v], 2)?),
            (None, _) => (k, v.contiguous()?),
        };
        self.layers[i] = Some(kv.clone());
        Ok(kv)
    }
}

/// The transformer.
#[derive(Debug, Clone)]
pub struct Transformer {
    /// Its configuration.
    pub cfg: ModelConfig,
    /// Architecture.
    pub arch: Arch,
    /// `[vocab, hidden]`.
    pub embed: Tensor,
    /// Blocks.
    pub blocks: Vec<Block>,
    /// Final norm.
    pub norm: Tensor,
    /// Untied output projection.
    pub lm_head: Option<Tensor>,
    /// Rotary inverse frequencies `[head_dim/2]` (f32).
    inv_freq: Tensor,
    /// Device.
    pub device: Device,
    /// Compute dtype.
    pub dtype: DType,
}

/// The HF names of the tensors of block `i`.
pub fn block_names(cfg: &ModelConfig, i: usize) -> Vec<String> {
    let p = format!("model.layers.{i}");
    let mut v = vec![
        format!("{p}.self_attn.q_proj.weight"),
        format!("{p}.self_attn.k_proj.weight"),
        format!("{p}.self_attn.v_proj.weight"),
        format!("{p}.self_attn.o_proj.weight"),
        format!("{p}.mlp.gate_proj.weight"),
        format!("{p}.mlp.up_proj.weight"),
        format!("{p}.mlp.down_proj.weight"),
        format!("{p}.input_layernorm.weight"),
        format!("{p}.post_attention_layernorm.weight"),
    ];
    if cfg.qkv_bias() {
        for n in ["q", "k", "v"] {
            v.push(format!("{p}.self_attn.{n}_proj.bias"));
        }
    }
    if cfg.o_bias() {
        v.push(format!("{p}.self_attn.o_proj.bias"));
    }
    if matches!(cfg.arch(), Ok(Arch::Qwen3)) {
        v.push(format!("{p}.self_attn.q_norm.weight"));
        v.push(format!("{p}.self_attn.k_norm.weight"));
    }
    v
}

/// Every tensor name of a configuration with its shape, in a fixed order.
pub fn tensor_shapes(cfg: &ModelConfig) -> Vec<(String, Vec<usize>)> {
    let (h, i, v) = (cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size);
    let (q, kv, hd) = (
        cfg.num_attention_heads * cfg.head_dim(),
        cfg.kv_heads() * cfg.head_dim(),
        cfg.head_dim(),
    );
    let mut out = vec![("model.embed_tokens.weight".to_string(), vec![v, h])];
    for l in 0..cfg.num_hidden_layers {
        for n in block_names(cfg, l) {
            let shape = if n.ends_with("q_proj.weight") {
                vec![q, h]
            } else if n.ends_with("k_proj.weight") || n.ends_with("v_proj.weight") {
                vec![kv, h]
            } else if n.ends_with("o_proj.weight") {
                vec![h, q]
            } else if n.ends_with("gate_proj.weight") || n.ends_with("up_proj.weight") {
                vec![i, h]
            } else if n.ends_with("down_proj.weight") {
                vec![h, i]
            } else if n.ends_with("q_proj.bias") {
                vec![q]
            } else if n.ends_with("k_proj.bias") || n.ends_with("v_proj.bias") {
                vec![kv]
            } else if n.ends_with("o_proj.bias") || n.ends_with("layernorm.weight") {
                vec![h]
            } else {
                vec![hd] // q_norm / k_norm
            };
            out.push((n, shape));
        }
    }
    out.push(("model.norm.weight".to_string(), vec![h]));
    if !cfg.tie_word_embeddings {
        out.push(("lm_head.weight".to_string(), vec![v, h]));
    }
    out
}

impl Transformer {
    /// Builds the model from named tensors (HF names), already on `device` in `dtype`.
    pub fn from_tensors(
        cfg: &ModelConfig,
        t: &BTreeMap<String, Tensor>,
        device: &Device,
        dtype: DType,
    ) -> std::result::Result<Self, ModelError> {
        let arch = cfg.arch().map_err(ModelError::Config)?;
        for (name, shape) in tensor_shapes(cfg) {
            let x = t
                .get(&name)
                .ok_or_else(|| ModelError::MissingTensor(name.clone()))?;
            if x.dims() != shape.as_slice() {
                return Err(ModelError::Shape {
                    name,
                    expected: shape,
                    found: x.dims().to_vec(),
                });
            }
        }
        let get = |n: &str| t[n].clone();
        let opt = |n: &str| t.get(n).cloned();
        let lin = |p: &str, bias: bool| Linear {
            w: get(&format!("{p}.weight")),
            b: if bias {
                opt(&format!("{p}.bias"))
            } else {
                None
            },
            lora: None,
        };
        let mut blocks = Vec::new();
        for l in 0..cfg.num_hidden_layers {
            let p = format!("model.layers.{l}");
            blocks.push(Block {
                q: lin(&format!("{p}.self_attn.q_proj"), cfg.qkv_bias()),
                k: lin(&format!("{p}.self_attn.k_proj"), cfg.qkv_bias()),
                v: lin(&format!("{p}.self_attn.v_proj"), cfg.qkv_bias()),
                o: lin(&format!("{p}.self_attn.o_proj"), cfg.o_bias()),
                q_norm: opt(&format!("{p}.self_attn.q_norm.weight")),
                k_norm: opt(&format!("{p}.self_attn.k_norm.weight")),
                gate: lin(&format!("{p}.mlp.gate_proj"), false),
                up: lin(&format!("{p}.mlp.up_proj"), false),
                down: lin(&format!("{p}.mlp.down_proj"), false),
                ln1: get(&format!("{p}.input_layernorm.weight")),
                ln2: get(&format!("{p}.post_attention_layernorm.weight")),
            });
        }
        let hd = cfg.head_dim();
        let inv: Vec<f32> = cfg
            .inv_freq()
            .map_err(ModelError::Config)?
            .into_iter()
            .map(|x| x as f32)
            .collect();
        Ok(Transformer {
            cfg: cfg.clone(),
            arch,
            embed: get("model.embed_tokens.weight"),
            blocks,
            norm: get("model.norm.weight"),
            lm_head: if cfg.tie_word_embeddings {
                None
            } else {
                Some(get("lm_head.weight"))
            },
            inv_freq: Tensor::from_vec(inv, hd / 2, device)?,
            device: device.clone(),
            dtype,
        })
    }

    /// Every tensor with its HF name (adapters excluded).
    pub fn named_tensors(&self) -> BTreeMap<String, Tensor> {
        let mut m = BTreeMap::new();
        m.insert("model.embed_tokens.weight".into(), self.embed.clone());
        for (l, b) in self.blocks.iter().enumerate() {
            let p = format!("model.layers.{l}");
            let mut lin = |n: &str, x: &Linear| {
                m.insert(format!("{p}.{n}.weight"), x.w.clone());
                if let Some(bias) = &x.b {
                    m.insert(format!("{p}.{n}.bias"), bias.clone());
                }
            };
            lin("self_attn.q_proj", &b.q);
            lin("self_attn.k_proj", &b.k);
            lin("self_attn.v_proj", &b.v);
            lin("self_attn.o_proj", &b.o);
            lin("mlp.gate_proj", &b.gate);
            lin("mlp.up_proj", &b.up);
            lin("mlp.down_proj", &b.down);
            m.insert(format!("{p}.input_layernorm.weight"), b.ln1.clone());
            m.insert(
                format!("{p}.post_attention_layernorm.weight"),
                b.ln2.clone(),
            );
            if let Some(q) = &b.q_norm {
                m.insert(format!("{p}.self_attn.q_norm.weight"), q.clone());
            }
            if let Some(k) = &b.k_norm {
                m.insert(format!("{p}.self_attn.k_norm.weight"), k.clone());
            }
        }
        m.insert("model.norm.weight".into(), self.norm.clone());
        if let Some(h) = &self.lm_head {
            m.insert("lm_head.weight".into(), h.clone());
        }
        m
    }

    /// Mutable access to every projection with its HF module path (for LoRA).
    pub fn projections_mut(&mut self) -> Vec<(String, &mut Linear)> {
        let mut v = Vec::new();
        for (l, b) in self.blocks.iter_mut().enumerate() {
            let p = format!("model.layers.{l}");
            v.push((format!("{p}.self_attn.q_proj"), &mut b.q));
            v.push((format!("{p}.self_attn.k_proj"), &mut b.k));
            v.push((format!("{p}.self_attn.v_proj"), &mut b.v));
            v.push((format!("{p}.self_attn.o_proj"), &mut b.o));
            v.push((format!("{p}.mlp.gate_proj"), &mut b.gate));
            v.push((format!("{p}.mlp.up_proj"), &mut b.up));
            v.push((format!("{p}.mlp.down_proj"), &mut b.down));
        }
        v
    }

    /// Makes every base tensor a trainable variable and returns them with their names. The
    /// model's tensors become the variables' tensors, so optimiser updates are seen at once.
    pub fn make_trainable(&mut self) -> Result<Vec<(String, Var)>> {
        let named = self.named_tensors();
        let mut vars: BTreeMap<String, Var> = BTreeMap::new();
        for (n, t) in named {
            vars.insert(n, Var::from_tensor(&t)?);
        }
        let v = |n: &str| vars[n].as_tensor().clone();
        self.embed = v("model.embed_tokens.weight");
        self.norm = v("model.norm.weight");
        if self.lm_head.is_some() {
            self.lm_head = Some(v("lm_head.weight"));
        }
        for (l, b) in self.blocks.iter_mut().enumerate() {
            let p = format!("model.layers.{l}");
            for (n, x) in [
                ("self_attn.q_proj", &mut b.q),
                ("self_attn.k_proj", &mut b.k),
                ("self_attn.v_proj", &mut b.v),
                ("self_attn.o_proj", &mut b.o),
                ("mlp.gate_proj", &mut b.gate),
                ("mlp.up_proj", &mut b.up),
                ("mlp.down_proj", &mut b.down),
            ] {
                x.w = v(&format!("{p}.{n}.weight"));
                if x.b.is_some() {
                    x.b = Some(v(&format!("{p}.{n}.bias")));
                }
            }
            b.ln1 = v(&format!("{p}.input_layernorm.weight"));
            b.ln2 = v(&format!("{p}.post_attention_layernorm.weight"));
            if b.q_norm.is_some() {
                b.q_norm = Some(v(&format!("{p}.self_attn.q_norm.weight")));
                b.k_norm = Some(v(&format!("{p}.self_attn.k_norm.weight")));
            }
        }
        Ok(vars.into_iter().collect())
    }

    /// The same model with every tensor detached from the autograd graph (storage shared, no
    /// copy): forward passes through it record no graph. Sampling and scoring use it, since a
    /// forward pass through trainable variables (LoRA adapters, a model being trained) would
    /// otherwise keep every intermediate activation alive until its output is dropped — for a
    /// batch of long prompts, many gigabytes.
    pub fn detached(&self) -> Transformer {
        let lin = |l: &Linear| Linear {
            w: l.w.detach(),
            b: l.b.as_ref().map(Tensor::detach),
            lora: l.lora.as_ref().map(|a| Lora {
                a: a.a.detach(),
                b: a.b.detach(),
                scale: a.scale,
            }),
        };
        Transformer {
            cfg: self.cfg.clone(),
            arch: self.arch,
            embed: self.embed.detach(),
            blocks: self
                .blocks
                .iter()
                .map(|b| Block {
                    q: lin(&b.q),
                    k: lin(&b.k),
                    v: lin(&b.v),
                    o: lin(&b.o),
                    q_norm: b.q_norm.as_ref().map(Tensor::detach),
                    k_norm: b.k_norm.as_ref().map(Tensor::detach),
                    gate: lin(&b.gate),
                    up: lin(&b.up),
                    down: lin(&b.down),
                    ln1: b.ln1.detach(),
                    ln2: b.ln2.detach(),
                })
                .collect(),
            norm: self.norm.detach(),
            lm_head: self.lm_head.as_ref().map(Tensor::detach),
            inv_freq: self.inv_freq.clone(),
            device: self.device.clone(),
            dtype: self.dtype,
        }
    }

    fn rope(&self, positions: &Tensor) -> Result<(Tensor, Tensor)> {
        // positions [B, T] → angles [B, T, 1, head_dim] (heads broadcast)
        let p = positions.to_dtype(DType::F32)?.unsqueeze(2)?;
        let f = p.broadcast_mul(&self.inv_freq.reshape((1, 1, ()))?)?;
        let f = Tensor::cat(&[&f, &f], D::Minus1)?.unsqueeze(2)?;
        Ok((
            f.cos()?.to_dtype(self.dtype)?,
            f.sin()?.to_dtype(self.dtype)?,
        ))
    }

    /// Logits `[B, T, vocab]` of the tokens `ids` `[B, T]` at `positions` `[B, T]`.
    ///
    /// `mask` is an additive f32 attention mask `[B, 1, T, S]` over the cached plus new keys
    /// (S = cached + T), or `None` for plain causal attention without a cache. With a cache, the
    /// new keys and values are appended to it.
    pub fn forward(
        &self,
        ids: &Tensor,
        positions: &Tensor,
        mask: Option<&Tensor>,
        cache: Option<&mut KvCache>,
    ) -> Result<Tensor> {
        let x = self.hidden(ids, positions, mask, cache)?;
        self.logits(&x)
    }

    /// The output projection of final hidden states `[…, hidden]` → `[…, vocab]`.
    pub fn logits(&self, x: &Tensor) -> Result<Tensor> {
        let head = self.lm_head.as_ref().unwrap_or(&self.embed);
        let mut shape = x.dims().to_vec();
        let hidden = shape.pop().unwrap_or(1);
        shape.push(head.dim(0)?);
        fused::linear(&x.reshape(((), hidden))?, head)?.reshape(shape)
    }

    /// Final hidden states `[B, T, hidden]`, after the last norm (see [`Transformer::forward`]).
    pub fn hidden(
        &self,
        ids: &Tensor,
        positions: &Tensor,
        mask: Option<&Tensor>,
        mut cache: Option<&mut KvCache>,
    ) -> Result<Tensor> {
        let (b, t) = ids.dims2()?;
        let (nh, nkv, hd) = (
            self.cfg.num_attention_heads,
            self.cfg.kv_heads(),
            self.cfg.head_dim(),
        );
        let eps = self.cfg.rms_norm_eps;
        let (cos, sin) = self.rope(positions)?;
        let rot = fused::Rotary::new(cos, sin)?;
        let mask = mask.map(fused::AttentionMask::new).transpose()?;
        if let Some(c) = cache.as_deref_mut() {
            if c.layers.len() != self.blocks.len() {
                c.layers = vec![None; self.blocks.len()];
            }
        }
        let scale = 1.0 / (hd as f64).sqrt();
        let n = b * t;
        // The residual stream stays [B·T, hidden]: every projection is one 2-D product.
        let mut x = self.embed.embedding(&ids.flatten_all()?)?;
        for (li, blk) in self.blocks.iter().enumerate() {
            let h = rms_norm(&x, &blk.ln1, eps)?;
            // projections as [B·T, heads, head_dim]; norms and rotary work per head vector
            let q = blk.q.forward(&h)?.reshape((n, nh, hd))?;
            let k = blk.k.forward(&h)?.reshape((n, nkv, hd))?;
            let v = blk.v.forward(&h)?.reshape((b, t, nkv, hd))?;
            let (q, k) = match (&blk.q_norm, &blk.k_norm) {
                (Some(qn), Some(kn)) => (rms_norm(&q, qn, eps)?, rms_norm(&k, kn, eps)?),
                _ => (q, k),
            };
            // [B, heads, T, head_dim]
            let (q, k, v) = (
                fused::rope(&q, &rot)?,
                fused::rope(&k, &rot)?,
                v.transpose(1, 2)?,
            );
            let (k, v) = match cache.as_deref_mut() {
                Some(c) => c.append(li, k, v)?,
                None => (k, v),
            };
            let y = fused::attention(&q, &k, &v, mask.as_ref(), scale)?.reshape((n, nh * hd))?;
            x = (x + blk.o.forward(&y)?)?;
            let h = rms_norm(&x, &blk.ln2, eps)?;
            let m = fused::swiglu(&blk.gate.forward(&h)?, &blk.up.forward(&h)?)?;
            x = (x + blk.down.forward(&m)?)?;
        }
        rms_norm(&x, &self.norm, eps)?.reshape((b, t, ()))
    }
}
