//! The household's tiny tokenizers cover ALFWorld: every ALFRED class and instance number is one
//! token whatever the corpus the warm start saw, and no text of a fixture game or of a split's
//! scene becomes `<unk>`.

use rla_core::Split;
use rla_env::household::data::{alfred, vocabulary};
use rla_env::household::splits::{eval_tasks, train_tasks};
use rla_env::household::{GameFile, HouseholdGame};
use rla_model::tok::build_pieces;

#[test]
fn no_household_text_becomes_unk_and_every_class_is_one_token() {
    // as the warm start builds it: the texts of some training tasks (which never show most
    // classes) and the household's vocabulary
    let mut corpus = vocabulary();
    for t in train_tasks(12, 5) {
        let mut env = HouseholdGame::from_task(&t).unwrap();
        corpus.push_str(&env.reset());
        corpus.push('\n');
        corpus.push_str(&env.admissible().join("\n"));
        corpus.push('\n');
    }
    let tok = build_pieces(&corpus, 1, &[]).unwrap();
    let unk = tok.inner.token_to_id("<unk>").unwrap();
    for c in &alfred().classes {
        let w = format!(" {}", c.to_ascii_lowercase());
        assert_eq!(tok.encode(&w).unwrap().len(), 1, "{w}");
    }
    for n in [1, 9, 28] {
        assert_eq!(tok.encode(&format!(" {n}")).unwrap().len(), 1, "{n}");
    }
    let mut texts = Vec::new();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    for set in ["alfworld-traces", "alfworld-shared-spots"] {
        for f in rla_env::household::game::game_folders(&fixtures.join(set)).unwrap_or_default() {
            let g = GameFile::load(&f).unwrap();
            let mut env = HouseholdGame::new(g.world.clone());
            texts.push(env.reset());
            texts.push(env.admissible().join("\n"));
        }
    }
    assert!(texts.len() >= 40, "the 20 fixture games");
    let mut tasks: Vec<_> = Split::EVALUATION.into_iter().flat_map(eval_tasks).collect();
    tasks.extend(train_tasks(100, 0));
    for t in &tasks {
        let mut env = HouseholdGame::from_task(t).unwrap();
        texts.push(env.reset());
        texts.push(env.admissible().join("\n"));
        for a in env.admissible().to_vec().iter().take(8) {
            texts.push(env.step(a).feedback);
        }
    }
    for text in &texts {
        let ids = tok.encode(text).unwrap();
        assert!(!ids.contains(&unk), "<unk> in {text:?}");
    }
}
