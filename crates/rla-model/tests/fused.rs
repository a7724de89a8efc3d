//! The fused CPU kernels agree with their plain-op references in value and in gradient.

use candle_core::{DType, Device, Tensor, Var};
use rla_model::fused::{self, rms_norm_plain};
use rla_model::ops::padded_causal_mask;
use rla_model::optim;

fn randn(shape: &[usize], dtype: DType, seed: u64) -> Tensor {
    // deterministic pseudo-random values in [-1, 1)
    let n: usize = shape.iter().product();
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let v: Vec<f64> = (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect();
    Tensor::from_vec(v, shape, &Device::Cpu)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

fn sum_sq(t: &Tensor) -> f64 {
    t.to_dtype(DType::F64)
        .unwrap()
        .sqr()
        .unwrap()
        .sum_all()
        .unwrap()
        .to_scalar::<f64>()
        .unwrap()
}

fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.dims(), b.dims());
    (a.to_dtype(DType::F64).unwrap() - b.to_dtype(DType::F64).unwrap())
        .unwrap()
        .abs()
        .unwrap()
        .flatten_all()
        .unwrap()
        .max(0)
        .unwrap()
        .to_scalar::<f64>()
        .unwrap()
}

/// Value and gradients (w.r.t. `vars`) of `sum(f(vars) ⊙ probe)`.
fn value_and_grads(
    vars: &[Var],
    probe: &Tensor,
    f: impl Fn(&[Tensor]) -> Tensor,
) -> (Tensor, Vec<Tensor>) {
    let ts: Vec<Tensor> = vars.iter().map(|v| v.as_tensor().clone()).collect();
    let y = f(&ts);
    let loss = (&y * probe).unwrap().sum_all().unwrap();
    let g = loss.backward().unwrap();
    (
        y.detach(),
        vars.iter()
            .map(|v| g.get(v.as_tensor()).expect("a gradient").clone())
            .collect(),
    )
}

/// `masked`: 0 none (causal), 1 left padding (causal), 2 a mask that lets queries see later keys.
fn check_attention(dtype: DType, tol: f64, h: usize, kvh: usize, t: usize, s: usize, masked: u8) {
    let (b, d) = (3, 8);
    let q = Var::from_tensor(&randn(&[b, h, t, d], dtype, 1)).unwrap();
    // keys and values read through a strided view: a narrow of a longer buffer
    let k = Var::from_tensor(&randn(&[b, kvh, s + 3, d], dtype, 2)).unwrap();
    let v = Var::from_tensor(&randn(&[b, kvh, s + 3, d], dtype, 3)).unwrap();
    let mask = match masked {
        0 => None,
        1 => {
            let valid: Vec<Vec<bool>> = (0..b)
                .map(|r| (0..s).map(|j| j >= r).collect()) // row r has r left-padding keys
                .collect();
            Some(padded_causal_mask(&valid, t, &Device::Cpu).unwrap())
        }
        _ => {
            // every third key hidden, the others visible from every query
            let m: Vec<f32> = (0..b * t * s)
                .map(|x| if (x % s) % 3 == 1 { -1e9 } else { 0.0 })
                .collect();
            Some(Tensor::from_vec(m, (b, 1, t, s), &Device::Cpu).unwrap())
        }
    };
    let wrapped = mask.as_ref().map(|m| fused::AttentionMask::new(m).unwrap());
    // a query that sees no key at all (left padding before its row's first token) has no defined
    // output and none is ever read: the probe leaves those rows out
    let seen: Vec<f32> = (0..b * t * h * d)
        .map(|x| {
            let (r, i) = (x / (t * h * d), (x / (h * d)) % t);
            if masked == 1 && i + s - t < r {
                0.0
            } else {
                1.0
            }
        })
        .collect();
    let seen = Tensor::from_vec(seen, (b, t, h, d), &Device::Cpu)
        .unwrap()
        .to_dtype(dtype)
        .unwrap();
    let probe = (randn(&[b, t, h, d], dtype, 4) * &seen).unwrap();
    let scale = 1.0 / (d as f64).sqrt();
    let vars = [q, k, v];
    let run = |fused_op: bool| {
        value_and_grads(&vars, &probe, |x| {
            let (k, v) = (x[1].narrow(2, 1, s).unwrap(), x[2].narrow(2, 2, s).unwrap());
            if fused_op {
                fused::attention(&x[0], &k, &v, wrapped.as_ref(), scale).unwrap()
            } else {
                fused::attention_plain(&x[0], &k, &v, mask.as_ref(), scale).unwrap()
            }
        })
    };
    let (yf, gf) = run(true);
    let (yp, gp) = run(false);
    let (yf, yp) = ((yf * &seen).unwrap(), (yp * &seen).unwrap());
    assert!(
        max_diff(&yf, &yp) < tol,
        "values differ by {}",
        max_diff(&yf, &yp)
    );
    for (i, (a, c)) in gf.iter().zip(&gp).enumerate() {
        let e = max_diff(a, c);
        assert!(e < tol, "gradient {i} differs by {e}");
    }
    // the gradient is not trivially zero
    assert!(gf
        .iter()
        .all(|g| max_diff(g, &g.zeros_like().unwrap()) > 1e-3));
}

#[test]
fn attention_matches_plain_ops_in_value_and_gradient() {
    for dtype in [DType::F32, DType::F64] {
        let tol = if dtype == DType::F32 { 1e-5 } else { 1e-12 };
        // grouped-query causal self-attention
        check_attention(dtype, tol, 4, 2, 6, 6, 0);
        // multi-head, queries after cached keys (causal offset)
        check_attention(dtype, tol, 2, 2, 3, 7, 0);
        // one query over a cache with left padding (generation)
        check_attention(dtype, tol, 4, 1, 1, 5, 1);
        // padded prefill
        check_attention(dtype, tol, 4, 2, 5, 5, 1);
        // queries in several blocks, each seeing only the keys up to its last query
        check_attention(dtype, tol, 4, 2, 70, 70, 0);
        check_attention(dtype, tol, 2, 1, 40, 75, 0);
        check_attention(dtype, tol, 2, 2, 70, 70, 1);
        // a mask that is not causal: every block sees every key
        check_attention(dtype, tol, 2, 2, 70, 70, 2);
        check_attention(dtype, tol, 2, 2, 4, 9, 2);
    }
}

#[test]
fn rms_norm_matches_plain_ops_in_value_and_gradient() {
    for dtype in [DType::F32, DType::F64] {
        let tol = if dtype == DType::F32 { 1e-5 } else { 1e-12 };
        let x = Var::from_tensor(&randn(&[5, 70, 12], dtype, 5)).unwrap();
        let w = Var::from_tensor(&(randn(&[12], dtype, 6) + 1.0).unwrap()).unwrap();
        let probe = randn(&[5, 70, 12], dtype, 7);
        let vars = [x, w];
        let (yf, gf) = value_and_grads(&vars, &probe, |t| {
            fused::rms_norm(&t[0], &t[1], 1e-6).unwrap()
        });
        let (yp, gp) = value_and_grads(&vars, &probe, |t| {
            rms_norm_plain(&t[0], &t[1], 1e-6).unwrap()
        });
        assert!(max_diff(&yf, &yp) < tol);
        for (a, c) in gf.iter().zip(&gp) {
            assert!(max_diff(a, c) < tol * 10.0, "{}", max_diff(a, c));
        }
        // a transposed (non-contiguous) input gives the same as its contiguous copy
        let xt = randn(&[12, 9], dtype, 8).t().unwrap();
        let a = fused::rms_norm(&xt, &vars[1], 1e-6).unwrap();
        let c = fused::rms_norm(&xt.contiguous().unwrap(), &vars[1], 1e-6).unwrap();
        assert_eq!(max_diff(&a, &c), 0.0);
    }
}

#[test]
fn token_logprobs_match_plain_ops_in_value_and_gradient() {
    for dtype in [DType::F32, DType::F64] {
        let tol = if dtype == DType::F32 { 1e-5 } else { 1e-12 };
        let logits = Var::from_tensor(&(randn(&[3, 40, 50], dtype, 9) * 4.0).unwrap()).unwrap();
        let targets = Tensor::from_vec(
            (0..120u32).map(|i| (i * 7 + 3) % 50).collect::<Vec<_>>(),
            (3, 40),
            &Device::Cpu,
        )
        .unwrap();
        let probe = randn(&[3, 40], dtype, 10);
        let vars = [logits];
        let (yf, gf) = value_and_grads(&vars, &probe, |t| {
            fused::token_logprobs(&t[0], &targets).unwrap()
        });
        let (yp, gp) = value_and_grads(&vars, &probe, |t| {
            fused::token_logprobs_plain(&t[0], &targets).unwrap()
        });
        assert!(max_diff(&yf, &yp) < tol);
        assert!(max_diff(&gf[0], &gp[0]) < tol);
        // every log-probability is a log-probability
        assert!(yf
            .to_dtype(DType::F64)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f64>()
            .unwrap()
            .iter()
            .all(|&x| x < 0.0));
    }
    // a target outside the vocabulary is an error, not a panic
    let logits = randn(&[2, 5], DType::F32, 11);
    let bad = Tensor::new(&[1u32, 5], &Device::Cpu).unwrap();
    let e = fused::token_logprobs(&logits, &bad)
        .unwrap_err()
        .to_string();
    assert!(e.contains("outside a vocabulary of 5"), "{e}");
}

#[test]
fn rope_matches_plain_ops_in_value_and_gradient() {
    for dtype in [DType::F32, DType::F64] {
        let tol = if dtype == DType::F32 { 1e-5 } else { 1e-12 };
        let (b, t, heads, d) = (2, 5, 3, 8);
        // tables of arbitrary positions (a left-padded row included)
        let pos: Vec<f32> = vec![0., 0., 0., 1., 2., 0., 1., 2., 3., 4.];
        let inv: Vec<f32> = (0..d / 2)
            .map(|i| 1.0 / 10000f32.powf(2.0 * i as f32 / d as f32))
            .collect();
        let mut ang = vec![];
        for p in &pos {
            for _ in 0..2 {
                ang.extend(inv.iter().map(|f| p * f));
            }
        }
        let ang = Tensor::from_vec(ang, (b, t, 1, d), &Device::Cpu).unwrap();
        let rot = fused::Rotary::new(
            ang.cos().unwrap().to_dtype(dtype).unwrap(),
            ang.sin().unwrap().to_dtype(dtype).unwrap(),
        )
        .unwrap();
        let x = Var::from_tensor(&randn(&[b * t, heads, d], dtype, 12)).unwrap();
        let probe = randn(&[b, heads, t, d], dtype, 13);
        let vars = [x];
        let (yf, gf) = value_and_grads(&vars, &probe, |v| fused::rope(&v[0], &rot).unwrap());
        let (yp, gp) = value_and_grads(&vars, &probe, |v| fused::rope_plain(&v[0], &rot).unwrap());
        assert!(max_diff(&yf, &yp) < tol, "{}", max_diff(&yf, &yp));
        assert!(
            max_diff(&gf[0], &gp[0]) < tol,
            "{}",
            max_diff(&gf[0], &gp[0])
        );
        // a rotation keeps every head vector's length
        let n_in = sum_sq(vars[0].as_tensor());
        let n_out = sum_sq(&yf);
        assert!((n_in - n_out).abs() < 1e-3 * n_in);
    }
}

#[test]
fn swiglu_matches_plain_ops_in_value_and_gradient() {
    for dtype in [DType::F32, DType::F64] {
        let tol = if dtype == DType::F32 { 1e-5 } else { 1e-12 };
        let g = Var::from_tensor(&(randn(&[7, 33], dtype, 14) * 3.0).unwrap()).unwrap();
        let u = Var::from_tensor(&randn(&[7, 33], dtype, 15)).unwrap();
        let probe = randn(&[7, 33], dtype, 16);
        let vars = [g, u];
        let (yf, gf) = value_and_grads(&vars, &probe, |v| fused::swiglu(&v[0], &v[1]).unwrap());
        let (yp, gp) = value_and_grads(&vars, &probe, |v| {
            fused::swiglu_plain(&v[0], &v[1]).unwrap()
        });
        assert!(max_diff(&yf, &yp) < tol);
        for (a, c) in gf.iter().zip(&gp) {
            assert!(max_diff(a, c) < tol, "{}", max_diff(a, c));
        }
    }
}

#[test]
fn adamw_kernel_follows_the_update_rule() {
    let w = Tensor::new(&[0.5f32, -1.0, 2.0], &Device::Cpu).unwrap();
    let g = Tensor::new(&[0.1f32, -0.2, 0.0], &Device::Cpu).unwrap();
    let m = Tensor::new(&[0.01f32, 0.0, -0.3], &Device::Cpu).unwrap();
    let v = Tensor::new(&[0.001f32, 0.02, 0.5], &Device::Cpu).unwrap();
    let s = optim::AdamStep {
        lr: 0.1,
        beta1: 0.9,
        beta2: 0.99,
        eps: 1e-8,
        weight_decay: 0.01,
        bc1: 1.0 - 0.9f64.powi(3),
        bc2: 1.0 - 0.99f64.powi(3),
        grad_scale: 0.5,
    };
    let (nw, nm, nv) = optim::adamw(&w, &g, &m, &v, &s)
        .unwrap()
        .expect("the CPU kernel applies");
    let (w, g, m, v) = (
        w.to_vec1::<f32>().unwrap(),
        g.to_vec1::<f32>().unwrap(),
        m.to_vec1::<f32>().unwrap(),
        v.to_vec1::<f32>().unwrap(),
    );
    let (nw, nm, nv) = (
        nw.to_vec1::<f32>().unwrap(),
        nm.to_vec1::<f32>().unwrap(),
        nv.to_vec1::<f32>().unwrap(),
    );
    for i in 0..3 {
        let gi = g[i] as f64 * 0.5;
        let mi = 0.9 * m[i] as f64 + 0.1 * gi;
        let vi = 0.99 * v[i] as f64 + 0.01 * gi * gi;
        let upd = (mi / s.bc1) / ((vi / s.bc2).sqrt() + 1e-8) + 0.01 * w[i] as f64;
        assert!((nm[i] as f64 - mi).abs() < 1e-7);
        assert!((nv[i] as f64 - vi).abs() < 1e-7);
        assert!(
            (nw[i] as f64 - (w[i] as f64 - 0.1 * upd)).abs() < 1e-6,
            "{i}"
        );
    }
    // bf16 weights are not the kernel's: the caller falls back to plain ops
    let wb = Tensor::new(&[1f32], &Device::Cpu)
        .unwrap()
        .to_dtype(DType::BF16)
        .unwrap();
    let one = Tensor::new(&[0f32], &Device::Cpu).unwrap();
    assert!(optim::adamw(&wb, &wb, &one, &one, &s).unwrap().is_none());
    // the sum of squares accumulates in f64
    let x = Tensor::new(&[3f32, 4.0], &Device::Cpu).unwrap();
    assert_eq!(optim::sum_squares(&x).unwrap(), 25.0);
}

#[test]
fn linear_matches_plain_ops_in_value_and_gradient() {
    for dtype in [DType::F32, DType::F64] {
        let tol = if dtype == DType::F32 { 1e-4 } else { 1e-11 };
        // few rows (weight on the left) and many rows
        for rows in [1, 5, 100] {
            let x = Var::from_tensor(&randn(&[rows, 24], dtype, 17 + rows as u64)).unwrap();
            let w = Var::from_tensor(&randn(&[40, 24], dtype, 18)).unwrap();
            let probe = randn(&[rows, 40], dtype, 19);
            let vars = [x, w];
            let (yf, gf) = value_and_grads(&vars, &probe, |v| fused::linear(&v[0], &v[1]).unwrap());
            let (yp, gp) = value_and_grads(&vars, &probe, |v| {
                fused::linear_plain(&v[0], &v[1]).unwrap()
            });
            assert!(
                max_diff(&yf, &yp) < tol,
                "{rows} rows: {}",
                max_diff(&yf, &yp)
            );
            for (a, c) in gf.iter().zip(&gp) {
                assert!(max_diff(a, c) < tol, "{rows} rows: {}", max_diff(a, c));
            }
        }
    }
    // mismatched widths are an error
    let x = randn(&[3, 5], DType::F32, 20);
    let w = randn(&[4, 6], DType::F32, 21);
    assert!(fused::linear(&x, &w).is_err());
}

#[test]
fn fast_exp_is_accurate_and_saturates() {
    let mut xs: Vec<f32> = (0..20001)
        .map(|i| -87.0 + 175.0 * i as f32 / 20000.0)
        .collect();
    let want: Vec<f64> = xs.iter().map(|&x| (x as f64).exp()).collect();
    fused::exp_f32_slice(&mut xs);
    for (got, want) in xs.iter().zip(&want) {
        let rel = ((*got as f64 - want) / want).abs();
        assert!(rel < 3e-7, "exp: {got} against {want}");
    }
    let mut edge = vec![f32::NEG_INFINITY, -1e9, -100.0, 0.0, 100.0, f32::INFINITY];
    fused::exp_f32_slice(&mut edge);
    assert_eq!(edge, vec![0.0, 0.0, 0.0, 1.0, f32::INFINITY, f32::INFINITY]);
}

#[test]
fn kernels_give_the_same_bits_whatever_the_thread_count() {
    // reductions over rows add their partial sums in a fixed order, so runs are reproducible
    let x = randn(&[300, 64], DType::F32, 22);
    let w = (randn(&[64], DType::F32, 23) + 1.0).unwrap();
    let probe = randn(&[300, 64], DType::F32, 24);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let vars = [Var::from_tensor(&x).unwrap(), Var::from_tensor(&w).unwrap()];
            let (_, g) = value_and_grads(&vars, &probe, |t| {
                fused::rms_norm(&t[0], &t[1], 1e-6).unwrap()
            });
            let big = randn(&[1 << 19], DType::F32, 25);
            (
                g[1].to_vec1::<f32>().unwrap(),
                optim::sum_squares(&big).unwrap(),
            )
        })
    };
    let (dw1, s1) = run(1);
    for threads in [2, 3, 7] {
        let (dw, s) = run(threads);
        assert_eq!(dw, dw1, "{threads} threads");
        assert_eq!(s.to_bits(), s1.to_bits(), "{threads} threads");
    }
}
