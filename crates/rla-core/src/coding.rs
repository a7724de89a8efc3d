//! Rewards of the coding setting (code and unit tests that evolve together), as the reference
//! computes them.
//!
//! * A program's reward is the fraction of ground-truth tests it passes, z-scored over the
//!   programs of the same task; a task whose share of all-passing programs lies outside the policy
//!   band ([0.2, 0.8]) is left out of the update.
//! * A program is *correct* if it passes every ground-truth test. A generated test is *correct* if
//!   every correct program passes it. A correct test earns the number of incorrect programs that
//!   fail it; an incorrect test earns minus the number of incorrect programs that pass it; with no
//!   incorrect program the reward is +1 or −1. Rewards are z-scored over the task's tests; tasks
//!   with no correct program are skipped.
//! * An unparseable test is scored as the worst incorrect test can be: −(number of incorrect
//!   programs), or −1 when there is none.

use crate::filter::Band;
use crate::stats::standardize;

/// How each program did on one test set: `passes[program][test]`.
pub type PassMatrix = [Vec<bool>];

/// Whether each program passes every test.
pub fn all_pass(passes: &PassMatrix) -> Vec<bool> {
    passes.iter().map(|r| r.iter().all(|&p| p)).collect()
}

/// Fraction of tests each program passes (0 for an empty test set).
pub fn pass_fractions(passes: &PassMatrix) -> Vec<f64> {
    passes
        .iter()
        .map(|r| {
            if r.is_empty() {
                0.0
            } else {
                r.iter().filter(|&&p| p).count() as f64 / r.len() as f64
            }
        })
        .collect()
}

/// The policy's advantages for one task: pass fractions on the ground-truth tests, z-scored over
/// the task's programs. `None` when the task is outside `band` (by its share of all-passing
/// programs) or the programs do not differ.
pub fn program_advantages(ground_truth: &PassMatrix, band: Band) -> Option<Vec<f64>> {
    if ground_truth.is_empty() {
        return None;
    }
    let ok = all_pass(ground_truth);
    let acc = ok.iter().filter(|&&c| c).count() as f64 / ok.len() as f64;
    if !band.contains(acc) {
        return None;
    }
    standardize(&pass_fractions(ground_truth))
}

/// Raw rewards of generated tests. `generated[t]` is `None` for an unparseable test, else whether
/// each program passes it; `correct[p]` says whether program p passes every ground-truth test.
/// `None` when no program is correct (the task is skipped).
pub fn test_rewards_raw(correct: &[bool], generated: &[Option<Vec<bool>>]) -> Option<Vec<f64>> {
    if !correct.iter().any(|&c| c) {
        return None;
    }
    let n_incorrect = correct.iter().filter(|&&c| !c).count();
    Some(
        generated
            .iter()
            .map(|g| match g {
                None => -(n_incorrect.max(1) as f64),
                Some(passes) => {
                    let test_ok = correct.iter().zip(passes).all(|(&c, &p)| !c || p);
                    if n_incorrect == 0 {
                        return if test_ok { 1.0 } else { -1.0 };
                    }
                    let inc_pass = correct
                        .iter()
                        .zip(passes)
                        .filter(|(&c, &p)| !c && p)
                        .count();
                    if test_ok {
                        (n_incorrect - inc_pass) as f64
                    } else {
                        -(inc_pass as f64)
                    }
                }
            })
            .collect(),
    )
}

/// The test writer's advantages for one task: [`test_rewards_raw`] z-scored over the task's
/// tests; `None` when the task is skipped or the rewards do not differ.
pub fn test_advantages(correct: &[bool], generated: &[Option<Vec<bool>>]) -> Option<Vec<f64>> {
    standardize(&test_rewards_raw(correct, generated)?)
}

/// Whether a generated test is correct (every correct program passes it); unparseable tests are
/// not.
pub fn test_correct(correct: &[bool], generated: &Option<Vec<bool>>) -> bool {
    match generated {
        None => false,
        Some(p) => correct.iter().zip(p).all(|(&c, &ok)| !c || ok),
    }
}

/// The paper's coding metrics over a set of tasks.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct CodingMetrics {
    /// Share of programs that pass every ground-truth test.
    #[serde(deserialize_with = "crate::nan::f64_or_nan")]
    pub code_accuracy: f64,
    /// Share of generated tests that are correct.
    #[serde(deserialize_with = "crate::nan::f64_or_nan")]
    pub test_accuracy: f64,
    /// Share of incorrect programs that fail at least one correct generated test.
    #[serde(deserialize_with = "crate::nan::f64_or_nan")]
    pub detection: f64,
    /// Programs counted.
    pub programs: usize,
    /// Generated tests counted.
    pub tests: usize,
}

/// Accumulates [`CodingMetrics`] task by task.
#[derive(Debug, Clone, Default)]
pub struct CodingTally {
    programs: usize,
    correct_programs: usize,
    tests: usize,
    correct_tests: usize,
    incorrect_programs: usize,
    detected: usize,
}

impl CodingTally {
    /// Adds one task: which programs are correct, and the generated tests' pass vectors.
    pub fn add(&mut self, correct: &[bool], generated: &[Option<Vec<bool>>]) {
        self.programs += correct.len();
        self.correct_programs += correct.iter().filter(|&&c| c).count();
        self.tests += generated.len();
        let good: Vec<&Vec<bool>> = generated
            .iter()
            .filter(|g| test_correct(correct, g))
            .filter_map(|g| g.as_ref())
            .collect();
        self.correct_tests += good.len();
        for (p, &c) in correct.iter().enumerate() {
            if !c {
                self.incorrect_programs += 1;
                if good.iter().any(|g| !g[p]) {
                    self.detected += 1;
                }
            }
        }
    }

    /// The metrics so far (shares of empty sets are 0).
    pub fn metrics(&self) -> CodingMetrics {
        let share = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        CodingMetrics {
            code_accuracy: share(self.correct_programs, self.programs),
            test_accuracy: share(self.correct_tests, self.tests),
            detection: share(self.detected, self.incorrect_programs),
            programs: self.programs,
            tests: self.tests,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: bool = true;
    const F: bool = false;

    #[test]
    fn program_rewards_by_hand() {
        // 4 programs × 2 tests: fractions 1, 1, .5, 0; all-pass share 0.5 (inside the band)
        let gt = vec![vec![T, T], vec![T, T], vec![T, F], vec![F, F]];
        assert_eq!(pass_fractions(&gt), vec![1.0, 1.0, 0.5, 0.0]);
        let a = program_advantages(&gt, Band::REWARD).unwrap();
        // mean 0.625, population std sqrt(((.375²)·2 + .125² + .625²)/4) = 0.41457
        let sd = ((0.375f64.powi(2) * 2.0 + 0.125f64.powi(2) + 0.625f64.powi(2)) / 4.0).sqrt();
        for (x, f) in a.iter().zip([1.0, 1.0, 0.5, 0.0]) {
            assert!((x - (f - 0.625) / sd).abs() < 1e-12);
        }
        // all-pass share 0.75 > 0.7: left out of a [0.3, 0.7] band; 1/4 < 0.3 too
        let band = Band {
            low: 0.3,
            high: 0.7,
        };
        let gt3 = vec![vec![T, T], vec![T, T], vec![T, T], vec![F, T]];
        assert_eq!(program_advantages(&gt3, band), None);
        // every program equal: no signal
        let same = vec![vec![T, F], vec![T, F]];
        assert_eq!(
            program_advantages(
                &same,
                Band {
                    low: 0.0,
                    high: 1.0
                }
            ),
            None
        );
    }

    #[test]
    fn test_rewards_by_hand() {
        // programs: 0 and 1 correct, 2 and 3 incorrect
        let correct = [T, T, F, F];
        let generated = vec![
            Some(vec![T, T, F, F]), // correct, rejects both incorrect → 2
            Some(vec![T, T, T, F]), // correct, rejects one → 1
            Some(vec![T, T, T, T]), // correct, rejects none → 0
            Some(vec![T, F, T, T]), // incorrect (fails correct 1), both incorrect pass → −2
            Some(vec![F, T, F, T]), // incorrect, one incorrect passes → −1
            None,                   // unparseable → −2
        ];
        assert_eq!(
            test_rewards_raw(&correct, &generated).unwrap(),
            vec![2.0, 1.0, 0.0, -2.0, -1.0, -2.0]
        );
        let z = test_advantages(&correct, &generated).unwrap();
        assert!(z.iter().sum::<f64>().abs() < 1e-12);
        assert!(z[0] > z[1] && z[1] > z[2] && z[2] > z[4] && z[4] > z[3]);
        // no incorrect program: ±1
        assert_eq!(
            test_rewards_raw(&[T, T], &[Some(vec![T, T]), Some(vec![T, F]), None]).unwrap(),
            vec![1.0, -1.0, -1.0]
        );
        // no correct program: skipped
        assert_eq!(test_rewards_raw(&[F, F], &[Some(vec![T, T])]), None);
    }

    #[test]
    fn metrics_by_hand() {
        let mut t = CodingTally::default();
        t.add(
            &[T, F, F],
            &[Some(vec![T, F, T]), Some(vec![F, F, F]), None],
        );
        t.add(&[F], &[Some(vec![T])]);
        let m = t.metrics();
        assert!((m.code_accuracy - 0.25).abs() < 1e-12); // 1 of 4 programs
                                                         // tests: #1 correct; #2 fails the correct program; #3 unparseable; task 2's test is
                                                         // correct (no correct program to fail it)
        assert!((m.test_accuracy - 0.5).abs() < 1e-12);
        // incorrect programs: p1 detected by test #1, p2 not, task 2's program not → 1/3
        assert!((m.detection - 1.0 / 3.0).abs() < 1e-12);
    }
}
