//! Rewrites along the difficulty ladder, and the fixed splits.

use super::{Perturb, Spec, World, MAX_HINTS};
use rand::{Rng, SeedableRng};
use rla_core::Split;

/// The harder rewrite of a spec: evaluator1 → evaluator2, else one more object; `None` at the
/// hardest.
pub fn harder(s: &Spec) -> Option<(String, Spec)> {
    if s.hints > 0 {
        return Some((
            "one hint fewer".into(),
            Spec {
                hints: s.hints - 1,
                ..s.clone()
            },
        ));
    }
    if s.variant < 2 {
        return Some((
            "switched to evaluator2".into(),
            Spec {
                variant: 2,
                ..s.clone()
            },
        ));
    }
    (s.objects < 3).then(|| {
        (
            format!("{} objects", s.objects + 1),
            Spec {
                objects: s.objects + 1,
                ..s.clone()
            },
        )
    })
}

/// The easier rewrite: a hint more, else evaluator2 → evaluator1, else one object fewer;
/// `None` at the easiest.
pub fn easier(s: &Spec) -> Option<(String, Spec)> {
    if s.hints < MAX_HINTS {
        return Some((
            "added a hint".into(),
            Spec {
                hints: s.hints + 1,
                ..s.clone()
            },
        ));
    }
    if s.variant > 1 {
        return Some((
            "switched to evaluator1".into(),
            Spec {
                variant: 1,
                ..s.clone()
            },
        ));
    }
    (s.objects > 1).then(|| {
        (
            format!("{} objects", s.objects - 1),
            Spec {
                objects: s.objects - 1,
                ..s.clone()
            },
        )
    })
}

/// The size of a fixed split of the desktop (the training pool: as many as asked).
pub fn split_size(which: Split) -> usize {
    match which {
        Split::InDomain => 230,
        Split::Ood => 139,
        Split::Validation => 140,
        Split::Train => usize::MAX,
    }
}

fn split_seed(which: Split) -> u64 {
    match which {
        Split::InDomain => 0xDE5C_0001,
        Split::Ood => 0xDE5C_0002,
        Split::Validation => 0xDE5C_0003,
        Split::Train => 0xDE5C_0004,
    }
}

/// The first `n` specs of a split of the plain world (evaluation splits are capped at their
/// size). Evaluation tasks mix both evaluators and 1–3 objects; the training pool starts at
/// evaluator1 with one object.
pub fn split(which: Split, n: usize) -> Vec<Spec> {
    split_in(World::Plain, which, n)
}

/// [`split`] in a world: the sheets world's OOD split is drawn from its held-out pools.
pub fn split_in(world: World, which: Split, n: usize) -> Vec<Spec> {
    let n = n.min(split_size(which));
    let salt = match world {
        World::Plain => 0,
        _ => 0x5EE7_0000_0000,
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(split_seed(which) ^ salt);
    let fams = world.families(which);
    let world = world.of_split(which);
    (0..n)
        .map(|i| {
            let family = fams[i % fams.len()];
            let seed = rng.gen();
            if which == Split::Train {
                Spec {
                    family,
                    seed,
                    objects: 1,
                    variant: 1,
                    hints: 0,
                    perturb: None,
                    world,
                }
            } else {
                Spec {
                    family,
                    seed,
                    objects: rng.gen_range(1..=3),
                    variant: rng.gen_range(1..=2),
                    hints: 0,
                    perturb: None,
                    world,
                }
            }
        })
        .collect()
}

/// The same tasks with `p` applied to each (`None`: as they are).
pub fn perturbed(specs: Vec<Spec>, p: Option<Perturb>) -> Vec<Spec> {
    specs
        .into_iter()
        .map(|s| Spec { perturb: p, ..s })
        .collect()
}
