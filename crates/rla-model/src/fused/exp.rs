//! The vectorised `exp` of f32s that the kernels' softmaxes and sigmoids use.

/// `exp` of one f32 to about one unit in the last place (Cephes' polynomial after the reduction
/// `x = n·ln 2 + r`), written so that a loop over a slice vectorises; below −87.3 it is 0 (so
/// that masked −∞ scores vanish), above 88.7 infinite.
#[inline(always)]
fn exp_f32(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2²³: adding and subtracting it rounds to an integer
    const LO: f32 = -87.336_55;
    const HI: f32 = 88.722_83;
    let xc = x.clamp(LO, HI);
    let n = (xc * std::f32::consts::LOG2_E + ROUND) - ROUND;
    let r = xc - n * LN2_HI - n * LN2_LO;
    let mut p = 1.987_569_1e-4f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let e = p * r * r + r + 1.0;
    // 2ⁿ from the exponent bits (n + 127 lies in [1, 254] after the clamp)
    let y = e * f32::from_bits((((n + 127.0) as i32) << 23) as u32);
    if x < LO {
        0.0
    } else if x > HI {
        f32::INFINITY
    } else {
        y
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn exp_f32_slice_avx2(xs: &mut [f32]) {
    xs.iter_mut().for_each(|x| *x = exp_f32(*x));
}

/// `x ← exp(x)` over f32s, with AVX2 where the CPU has it.
pub fn exp_f32_slice(xs: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports the enabled features
        return unsafe { exp_f32_slice_avx2(xs) };
    }
    xs.iter_mut().for_each(|x| *x = exp_f32(*x));
}
