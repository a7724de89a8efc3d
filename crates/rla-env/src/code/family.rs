//! A problem family small models can learn from scratch: read an integer, apply a short chain of
//! integer operations, print the result. Statements name the operations in words, programs are
//! one line per operation, and tests come from evaluating the chain with Python's semantics
//! (floor division and a non-negative remainder). Difficulty is the chain's length, so the
//! curator makes a problem harder by appending an operation and easier by dropping one.

use super::{Problem, TestCase};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// One operation on `x`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// `x + k`
    Add(i64),
    /// `x - k`
    Sub(i64),
    /// `x * k`
    Mul(i64),
    /// `x // k` (floor)
    Div(i64),
    /// `x % k` (non-negative for k > 0)
    Mod(i64),
    /// `x * x`
    Square,
    /// `-x`
    Negate,
    /// `abs(x)`
    Abs,
}

impl Op {
    /// The operation on a value, as Python computes it; `None` on division by zero or overflow.
    pub fn apply(self, x: i64) -> Option<i64> {
        match self {
            Op::Add(k) => x.checked_add(k),
            Op::Sub(k) => x.checked_sub(k),
            Op::Mul(k) => x.checked_mul(k),
            Op::Div(k) => {
                let (q, r) = (x.checked_div(k)?, x.checked_rem(k)?);
                Some(if r != 0 && ((r < 0) != (k < 0)) {
                    q - 1
                } else {
                    q
                })
            }
            Op::Mod(k) => {
                let r = x.checked_rem(k)?;
                Some(if r != 0 && ((r < 0) != (k < 0)) {
                    r + k
                } else {
                    r
                })
            }
            Op::Square => x.checked_mul(x),
            Op::Negate => x.checked_neg(),
            Op::Abs => x.checked_abs(),
        }
    }

    /// The statement's words for it.
    pub fn phrase(self) -> String {
        match self {
            Op::Add(k) => format!("add {k}"),
            Op::Sub(k) => format!("subtract {k}"),
            Op::Mul(k) => format!("multiply by {k}"),
            Op::Div(k) => format!("divide by {k} rounding down"),
            Op::Mod(k) => format!("take the remainder modulo {k}"),
            Op::Square => "square it".into(),
            Op::Negate => "negate it".into(),
            Op::Abs => "take the absolute value".into(),
        }
    }

    /// Its line of Python.
    pub fn code(self) -> String {
        match self {
            Op::Add(k) => format!("x = x + {k}"),
            Op::Sub(k) => format!("x = x - {k}"),
            Op::Mul(k) => format!("x = x * {k}"),
            Op::Div(k) => format!("x = x // {k}"),
            Op::Mod(k) => format!("x = x % {k}"),
            Op::Square => "x = x * x".into(),
            Op::Negate => "x = -x".into(),
            Op::Abs => "x = abs(x)".into(),
        }
    }

    fn random(rng: &mut ChaCha8Rng) -> Op {
        let k = rng.gen_range(2..=5);
        match rng.gen_range(0..8) {
            0 => Op::Add(k),
            1 => Op::Sub(k),
            2 => Op::Mul(k),
            3 => Op::Div(k),
            4 => Op::Mod(k),
            5 => Op::Square,
            6 => Op::Negate,
            _ => Op::Abs,
        }
    }
}

/// A problem of the family: its operations and the seed of its test inputs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArithSpec {
    /// The chain, applied in order.
    pub ops: Vec<Op>,
    /// Seed of the test inputs.
    pub seed: u64,
}

impl ArithSpec {
    /// The chain applied to `x`; `None` on division by zero or overflow.
    pub fn eval(&self, x: i64) -> Option<i64> {
        self.ops.iter().try_fold(x, |v, op| op.apply(v))
    }

    /// Whether every test input in [-9, 20] gives a result of at most a thousand in size (so
    /// outputs stay short and Rust's integers agree with Python's).
    pub fn well_formed(&self) -> bool {
        !self.ops.is_empty() && (-9..=20).all(|x| self.eval(x).is_some_and(|v| v.abs() <= 1_000))
    }

    /// The statement.
    pub fn statement(&self) -> String {
        let steps: Vec<String> = self.ops.iter().map(|o| o.phrase()).collect();
        format!(
            "Read an integer x. Then {}. Print x.",
            steps.join(", then ")
        )
    }

    /// The reference solution.
    pub fn solution(&self) -> String {
        let mut s = String::from("x = int(input())\n");
        for o in &self.ops {
            s.push_str(&o.code());
            s.push('\n');
        }
        s.push_str("print(x)\n");
        s
    }

    /// `n` tests on distinct inputs in [-9, 20].
    pub fn tests(&self, n: usize) -> Vec<TestCase> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut xs: Vec<i64> = Vec::new();
        while xs.len() < n.min(30) {
            let x = rng.gen_range(-9..=20);
            if !xs.contains(&x) {
                xs.push(x);
            }
        }
        xs.iter()
            .map(|&x| TestCase {
                input: format!("{x}\n"),
                output: format!("{}\n", self.eval(x).unwrap_or_default()),
            })
            .collect()
    }

    /// The problem with `n_tests` ground-truth tests.
    pub fn problem(&self, id: &str, n_tests: usize) -> Problem {
        Problem {
            id: id.to_string(),
            statement: self.statement(),
            tests: self.tests(n_tests),
            solution: Some(self.solution()),
            parent: None,
        }
    }

    /// A harder variant: one more operation (at most 6), keeping the problem well formed.
    pub fn harder(&self, rng: &mut ChaCha8Rng) -> Option<ArithSpec> {
        if self.ops.len() >= 6 {
            return None;
        }
        (0..32).find_map(|_| {
            let mut ops = self.ops.clone();
            ops.push(Op::random(rng));
            let s = ArithSpec {
                ops,
                seed: rng.gen(),
            };
            s.well_formed().then_some(s)
        })
    }

    /// An easier variant: the last operation dropped (at least one stays).
    pub fn easier(&self, rng: &mut ChaCha8Rng) -> Option<ArithSpec> {
        (self.ops.len() > 1).then(|| ArithSpec {
            ops: self.ops[..self.ops.len() - 1].to_vec(),
            seed: rng.gen(),
        })
    }
}

/// `n` seeded problems with 1 to `max_ops` operations.
pub fn generate(n: usize, max_ops: usize, seed: u64) -> Vec<ArithSpec> {
    generate_between(n, 1, max_ops, seed)
}

/// `n` seeded problems with `min_ops` to `max_ops` operations.
pub fn generate_between(n: usize, min_ops: usize, max_ops: usize, seed: u64) -> Vec<ArithSpec> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    let lo = min_ops.max(1);
    while out.len() < n {
        let k = rng.gen_range(lo..=max_ops.max(lo));
        let s = ArithSpec {
            ops: (0..k).map(|_| Op::random(&mut rng)).collect(),
            seed: rng.gen(),
        };
        if s.well_formed() {
            out.push(s);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_semantics() {
        assert_eq!(Op::Div(2).apply(-3), Some(-2));
        assert_eq!(Op::Div(3).apply(7), Some(2));
        assert_eq!(Op::Div(-2).apply(7), Some(-4));
        assert_eq!(Op::Mod(4).apply(-3), Some(1));
        assert_eq!(Op::Mod(-2).apply(7), Some(-1));
        assert_eq!(Op::Div(0).apply(7), None);
        assert_eq!(Op::Square.apply(i64::MAX), None);
        let s = ArithSpec {
            ops: vec![Op::Add(3), Op::Mul(2)],
            seed: 1,
        };
        assert_eq!(s.eval(5), Some(16));
        assert_eq!(
            s.statement(),
            "Read an integer x. Then add 3, then multiply by 2. Print x."
        );
        assert_eq!(
            s.solution(),
            "x = int(input())\nx = x + 3\nx = x * 2\nprint(x)\n"
        );
        let t = s.tests(5);
        assert_eq!(t.len(), 5);
        for c in &t {
            let x: i64 = c.input.trim().parse().unwrap();
            assert_eq!(c.output.trim().parse::<i64>().ok(), s.eval(x));
        }
    }

    #[test]
    fn seeded_and_rewritable() {
        assert_eq!(generate(10, 3, 7), generate(10, 3, 7));
        assert_ne!(generate(10, 3, 7), generate(10, 3, 8));
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let s = &generate(1, 1, 3)[0];
        assert!(s.easier(&mut rng).is_none());
        let h = s.harder(&mut rng).unwrap();
        assert_eq!(h.ops.len(), s.ops.len() + 1);
        assert_eq!(h.easier(&mut rng).unwrap().ops, s.ops);
    }
}
