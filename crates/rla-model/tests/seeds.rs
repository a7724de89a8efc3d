//! Each prompt's own seed (`rla_lm::Request::seeds`): a prompt's samples draw from streams of its
//! seed alone, whatever else the batch holds, so two policies evaluated on the same tasks meet
//! the same draws episode for episode.

use candle_core::{DType, Device};
use rla_model::config::{Arch, ModelConfig};
use rla_model::model::Transformer;
use rla_model::sample::{generate_seeded, SampleParams};
use rla_model::tok::{build_word_level, Tok};
use rla_model::weights::init_tensors;

const CORPUS: &str = "you arrive at fridge 1 . the fridge 1 is closed .\nyou open the fridge 1 . in it you see a egg 1 .\ngo to cabinet 2 take egg 1 from fridge 1\n";

fn setup(seed: u64) -> (Transformer, Tok) {
    let tok = build_word_level(CORPUS, 1).unwrap();
    let cfg = ModelConfig::tiny(Arch::Qwen3, tok.vocab_size(), 32, 2, 4, 2);
    let t = init_tensors(&cfg, seed, DType::F32, &Device::Cpu).unwrap();
    (
        Transformer::from_tensors(&cfg, &t, &Device::Cpu, DType::F32).unwrap(),
        tok,
    )
}

/// The tokens of each sample of each prompt.
fn tokens(
    (m, tok): &(Transformer, Tok),
    prompts: &[&str],
    seeds: Option<&[u64]>,
) -> Vec<Vec<Vec<u32>>> {
    let ids: Vec<Vec<u32>> = prompts.iter().map(|p| tok.encode(p).unwrap()).collect();
    let p = SampleParams {
        max_new_tokens: 10,
        temperature: 1.5,
        seed: 3,
        ..Default::default()
    };
    generate_seeded(m, tok, &ids, 2, &p, None, seeds)
        .unwrap()
        .into_iter()
        .map(|s| s.into_iter().map(|x| x.tokens).collect())
        .collect()
}

#[test]
fn a_prompts_draws_follow_its_own_seed_not_its_neighbours() {
    let model = setup(1);
    let (a, b) = ("you open the fridge 1 .", "go to cabinet 2");
    let alone = tokens(&model, &[a], Some(&[41]));
    // beside another prompt, before or after it, with any seed: the same samples
    for (prompts, seeds, at) in [
        ([b, a], [5, 41], 1),
        ([a, b], [41, 77], 0),
        ([b, a], [6, 41], 1),
    ] {
        assert_eq!(tokens(&model, &prompts, Some(&seeds))[at], alone[0]);
    }
    // its two samples draw from streams of their own
    assert_ne!(alone[0][0], alone[0][1]);
    // another seed, other draws; without seeds, the call's one stream, shared by the batch
    assert_ne!(tokens(&model, &[a], Some(&[42]))[0], alone[0]);
    let shared = |prompts: &[&str]| tokens(&model, prompts, None);
    assert_ne!(shared(&[b, a])[1], shared(&[a])[0]);
    // one seed a prompt, no more and no less
    let ids = vec![model.1.encode(a).unwrap()];
    let p = SampleParams::default();
    assert!(generate_seeded(&model.0, &model.1, &ids, 1, &p, None, Some(&[1, 2])).is_err());
}
