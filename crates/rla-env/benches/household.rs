//! Criterion benchmark of the household: one random admissible step, with the admissible list
//! computed every step as ALFWorld does.

use criterion::{criterion_group, criterion_main, Criterion};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rla_env::household::{GameFile, HouseholdGame};
use std::path::PathBuf;

fn step(c: &mut Criterion) {
    let root =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/alfworld-traces");
    for name in [
        "16-pick_cool_then_place_in_recep-kitchen",
        "01-look_at_obj_in_light-bedroom",
    ] {
        let g = GameFile::load(root.join(name)).expect("fixture");
        let mut env = HouseholdGame::new(g.world.clone());
        env.reset();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        c.bench_function(&format!("household step {name}"), |b| {
            b.iter(|| {
                let cmd = env
                    .admissible()
                    .choose(&mut rng)
                    .expect("non-empty")
                    .clone();
                if env.step(&cmd).done {
                    env.reset();
                }
            })
        });
    }
}

criterion_group!(benches, step);
criterion_main!(benches);
