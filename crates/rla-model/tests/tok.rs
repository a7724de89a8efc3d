//! Tokenizers and chat templates.

use rla_model::tok::{build_pieces, build_word_level, render_chat_template, Message, Tok};
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/chat")
}

#[test]
fn chat_templates_render_as_jinja2_renders_them_for_transformers() {
    let cases: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("expected.json")).unwrap())
            .unwrap();
    assert_eq!(cases.len(), 12);
    for c in cases {
        let tpl =
            std::fs::read_to_string(fixtures().join(c["template"].as_str().unwrap())).unwrap();
        let msgs: Vec<Message> = c["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| Message::new(m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
            .collect();
        let got = render_chat_template(
            &tpl,
            &msgs,
            c["add_generation_prompt"].as_bool().unwrap(),
            Some(""),
            Some("<|im_end|>"),
        )
        .unwrap();
        assert_eq!(got, c["expected"].as_str().unwrap(), "{}", c["template"]);
    }
}

const CORPUS: &str = "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you see a cabinet 2, a cabinet 1, and a fridge 1.\n\nYour task is to: put a clean mug in cabinet.\nYou arrive at fridge 1. The fridge 1 is closed.\nThe step helps. \\boxed{1}\nNo progress. \\boxed{-1}\n";

#[test]
fn word_level_tokenizer_round_trips_its_corpus_and_saves_as_tokenizer_json() {
    let tok = build_word_level(CORPUS, 1).unwrap();
    for line in CORPUS.lines() {
        let ids = tok.encode(line).unwrap();
        assert!(!ids.contains(&1), "no <unk> in {line:?}");
        assert_eq!(tok.decode(&ids).unwrap(), line);
    }
    // special tokens are single tokens; unknown words become <unk>
    let ids = tok
        .encode("<|im_start|>user\nflying saucer<|im_end|>")
        .unwrap();
    assert_eq!(ids[0], 2);
    assert_eq!(*ids.last().unwrap(), 3);
    assert!(ids.contains(&1));
    // chat prompts tokenize with the same ids after a save/load round trip
    let dir = tempfile::tempdir().unwrap();
    tok.save(dir.path()).unwrap();
    let back = Tok::load(dir.path()).unwrap();
    let msgs = [Message::new("user", "You arrive at fridge 1.")];
    let p = back.apply_chat_template(&msgs, true).unwrap();
    assert_eq!(
        p,
        "<|im_start|>user\nYou arrive at fridge 1.<|im_end|>\n<|im_start|>assistant\n"
    );
    assert_eq!(back.encode(&p).unwrap(), tok.encode(&p).unwrap());
    assert_eq!(back.eos_ids, vec![3]);
    assert_eq!(back.vocab_size(), tok.vocab_size());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("tokenizer.json")).unwrap())
            .unwrap();
    assert_eq!(json["model"]["type"], "WordLevel");
}

#[test]
fn a_chat_template_beside_the_config_is_read_as_transformers_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let tok = build_word_level("hello world\n", 1).unwrap();
    tok.save(dir.path()).unwrap();
    // current transformers keeps the template in chat_template.jinja, preferred to the config's
    let cfg = dir.path().join("tokenizer_config.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("chat_template");
    std::fs::write(&cfg, v.to_string()).unwrap();
    assert!(Tok::load(dir.path()).unwrap().chat_template.is_none());
    let t = "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}";
    std::fs::write(dir.path().join("chat_template.jinja"), t).unwrap();
    let tok = Tok::load(dir.path()).unwrap();
    let text = tok
        .apply_chat_template(&[Message::new("user", "hi")], false)
        .unwrap();
    assert_eq!(text, "[user] hi\n");
    // the legacy chat_template.json
    std::fs::remove_file(dir.path().join("chat_template.jinja")).unwrap();
    std::fs::write(
        dir.path().join("chat_template.json"),
        serde_json::json!({"chat_template": t}).to_string(),
    )
    .unwrap();
    assert_eq!(
        Tok::load(dir.path()).unwrap().chat_template.as_deref(),
        Some(t)
    );
}

#[test]
fn missing_or_broken_tokenizer_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let e = Tok::load(dir.path()).unwrap_err().to_string();
    assert!(e.contains("tokenizer.json"), "{e}");
    std::fs::write(dir.path().join("tokenizer.json"), "{").unwrap();
    let e = Tok::load(dir.path()).unwrap_err().to_string();
    assert!(e.contains("tokenizer.json"), "{e}");
}

#[test]
fn tiny_tokenizers_cut_an_unseen_word_into_pieces_rather_than_one_unk() {
    // the corpus shows every letter and digit somewhere, not the words below
    let corpus =
        "go to the fridge 1\nopen the fridge 1\nabcdefghijklmnopqrstuvwxyz 0123456789 =[],;{}\n";
    let tok = build_pieces(corpus, 1, &[" desk".to_string()]).unwrap();
    let unk = tok.inner.token_to_id("<unk>").unwrap();
    // words of the corpus and required words are one token each, as a word-level tokenizer has them
    assert_eq!(tok.encode(" fridge").unwrap().len(), 1);
    assert_eq!(tok.encode(" desk").unwrap().len(), 1);
    let words = build_word_level(corpus, 1).unwrap();
    assert_eq!(
        tok.encode("go to the fridge 1").unwrap(),
        words.encode("go to the fridge 1").unwrap()
    );
    // an unseen word: pieces, no <unk>, and decoding gives the text back
    for text in [
        "go to the tennisracket 9",
        "take basketball 12 from desk 3",
        "x = [1, 2]; {ok}",
    ] {
        let ids = tok.encode(text).unwrap();
        assert!(!ids.contains(&unk), "{text}: {ids:?}");
        assert_eq!(tok.decode(&ids).unwrap(), text);
    }
    assert!(tok.encode(" tennisracket").unwrap().len() > 1);
    // only a character the corpus never shows is <unk>
    assert!(tok.encode("café").unwrap().contains(&unk));
    assert!(
        words.encode(" tennisracket").unwrap().contains(&unk),
        "the word-level one has no pieces"
    );
    // saved and read back, it is the same tokenizer
    let dir = tempfile::tempdir().unwrap();
    tok.save(dir.path()).unwrap();
    let back = Tok::load(dir.path()).unwrap();
    assert_eq!(
        back.encode("go to the tennisracket 9").unwrap(),
        tok.encode("go to the tennisracket 9").unwrap()
    );
}
