//! Choosing and counting among sampled programs: the unbiased pass@k estimator (Chen et al.,
//! 2021) and best-of-N selection by generated unit tests (the paper's agentic use of the trained
//! test writer).

/// The unbiased estimate of pass@k from `n` samples of which `c` are correct:
/// `1 − C(n−c, k) / C(n, k)`, computed as a product so large `n` stays exact in floating point.
/// `None` when `k` is 0 or exceeds `n`.
pub fn pass_at_k(n: usize, c: usize, k: usize) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    // C(n−c, k)/C(n, k) = Π_{i=n−c+1}^{n} (1 − k/i)
    let miss: f64 = (n - c + 1..=n).map(|i| 1.0 - k as f64 / i as f64).product();
    Some(1.0 - miss)
}

/// The k at which pass@k is reported for `n` samples: 1, 2, 5, 10, 20, 50, 100, … up to `n`,
/// and `n` itself.
pub fn report_ks(n: usize) -> Vec<usize> {
    let mut ks = Vec::new();
    let mut scale = 1;
    'outer: loop {
        for m in [1, 2, 5] {
            let k = m * scale;
            if k > n {
                break 'outer;
            }
            ks.push(k);
        }
        scale *= 10;
    }
    if n > 0 && ks.last() != Some(&n) {
        ks.push(n);
    }
    ks
}

/// Best of N: the program that passes the most generated tests. `passes[t]` is `None` for an
/// unparseable test, else whether each of the `programs` passes it. Ties go to the earliest
/// program; `None` when there is no program.
pub fn best_of_n(programs: usize, passes: &[Option<Vec<bool>>]) -> Option<usize> {
    if programs == 0 {
        return None;
    }
    let score = |p: usize| {
        passes
            .iter()
            .flatten()
            .filter(|row| row.get(p).copied().unwrap_or(false))
            .count()
    };
    // max_by_key keeps the last maximum; scanning backwards keeps the earliest
    (0..programs).rev().max_by_key(|&p| score(p))
}

/// Best of N by agreement: programs that pass exactly the same generated tests behave alike on
/// the test writer's inputs, so they form one cluster, and the largest cluster wins (ties: the
/// cluster passing more tests, then the earliest program); its earliest program is chosen. Unlike
/// [`best_of_n`] it needs only the test writer's inputs to be telling, not its outputs right.
/// `None` when there is no program.
pub fn consensus_of_n(programs: usize, passes: &[Option<Vec<bool>>]) -> Option<usize> {
    if programs == 0 {
        return None;
    }
    let vector = |p: usize| -> Vec<bool> {
        passes
            .iter()
            .flatten()
            .map(|row| row.get(p).copied().unwrap_or(false))
            .collect()
    };
    let vectors: Vec<Vec<bool>> = (0..programs).map(vector).collect();
    let key = |p: usize| {
        let size = vectors.iter().filter(|v| **v == vectors[p]).count();
        let passed = vectors[p].iter().filter(|&&x| x).count();
        (size, passed)
    };
    (0..programs).rev().max_by_key(|&p| key(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pass@k by brute force: the share of k-subsets holding a correct sample.
    fn brute(n: usize, c: usize, k: usize) -> f64 {
        let (mut hit, mut all) = (0u64, 0u64);
        for mask in 0u32..(1 << n) {
            if mask.count_ones() as usize != k {
                continue;
            }
            all += 1;
            // samples 0..c are the correct ones
            if (0..c).any(|i| mask & (1 << i) != 0) {
                hit += 1;
            }
        }
        hit as f64 / all as f64
    }

    #[test]
    fn pass_at_k_matches_counting_subsets() {
        for n in 1..=10 {
            for c in 0..=n {
                for k in 1..=n {
                    let e = pass_at_k(n, c, k).unwrap();
                    assert!((e - brute(n, c, k)).abs() < 1e-12, "n={n} c={c} k={k}: {e}");
                }
            }
        }
        assert!((pass_at_k(5, 2, 1).unwrap() - 0.4).abs() < 1e-12);
        assert_eq!(pass_at_k(4, 1, 0), None);
        assert_eq!(pass_at_k(4, 1, 5), None);
        assert_eq!(pass_at_k(4, 5, 1), None);
    }

    #[test]
    fn reported_ks_end_at_n() {
        assert_eq!(report_ks(1), vec![1]);
        assert_eq!(report_ks(8), vec![1, 2, 5, 8]);
        assert_eq!(report_ks(10), vec![1, 2, 5, 10]);
        assert_eq!(report_ks(25), vec![1, 2, 5, 10, 20, 25]);
        assert!(report_ks(0).is_empty());
    }

    #[test]
    fn best_of_n_counts_passed_tests_and_breaks_ties_early() {
        let t = |v: &[u8]| Some(v.iter().map(|&x| x == 1).collect::<Vec<bool>>());
        // program 2 passes three tests, the others two at most; the unparseable test counts for none
        let passes = vec![t(&[1, 0, 1]), t(&[0, 1, 1]), None, t(&[1, 0, 1])];
        assert_eq!(best_of_n(3, &passes), Some(2));
        // a tie between 0 and 2 goes to 0
        let passes = vec![t(&[1, 0, 1]), t(&[0, 1, 0])];
        assert_eq!(best_of_n(3, &passes), Some(0));
        // no tests: the first program
        assert_eq!(best_of_n(3, &[]), Some(0));
        assert_eq!(best_of_n(0, &passes), None);
    }

    #[test]
    fn consensus_picks_the_largest_cluster_even_when_the_tests_are_wrong() {
        let t = |v: &[u8]| Some(v.iter().map(|&x| x == 1).collect::<Vec<bool>>());
        // programs 1, 2 and 4 behave alike (fail both tests); 0 and 3 pass one each
        let passes = vec![t(&[1, 0, 0, 0, 0]), t(&[0, 0, 0, 1, 0])];
        assert_eq!(best_of_n(5, &passes), Some(0));
        assert_eq!(consensus_of_n(5, &passes), Some(1));
        // equal clusters: the one passing more tests, then the earliest
        let passes = vec![t(&[1, 1, 0, 0])];
        assert_eq!(consensus_of_n(4, &passes), Some(0));
        let passes = vec![t(&[0, 0, 1, 1])];
        assert_eq!(consensus_of_n(4, &passes), Some(2));
        // no tests: one cluster, the first program
        assert_eq!(consensus_of_n(3, &[None]), Some(0));
        assert_eq!(consensus_of_n(0, &[]), None);
    }
}
