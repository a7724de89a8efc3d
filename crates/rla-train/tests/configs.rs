//! The shipped configurations parse and validate.

use rla_train::RunConfig;
use std::path::PathBuf;

#[test]
fn shipped_configs_are_valid() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    for name in [
        "quickstart.toml",
        "household-long.toml",
        "household-base.toml",
        "coding-base.toml",
        "desktop-base.toml",
        "desktop-sheets-base.toml",
        "alfworld-qwen2.5-7b.toml",
        "alfworld-qwen2.5-7b-vllm.toml",
        "coding-tiny.toml",
        "desktop-tiny.toml",
        "smollm2-household.toml",
    ] {
        let c = RunConfig::load(&dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert!(c.iterations > 0);
    }
}

#[test]
fn the_alfworld_config_reads_its_games_from_alfworld_data() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    let text = std::fs::read_to_string(dir.join("alfworld.toml")).unwrap();
    // as if ALFWORLD_DATA were set: the paths are expanded and recorded
    let c = RunConfig::parse_in(&text.replace("$ALFWORLD_DATA", "/data/alfworld"), &dir).unwrap();
    let h = rla_train::household::config::HouseholdConfig::of(&c);
    use rla_train::config::SettingConfig;
    assert_eq!(
        h.train_games.as_deref(),
        Some(std::path::Path::new("/data/alfworld/json_2.1.1/train"))
    );
    assert_eq!(
        h.eval_games.ood.as_deref(),
        Some(std::path::Path::new(
            "/data/alfworld/json_2.1.1/valid_unseen"
        ))
    );
    assert_eq!((h.train_step_limit, h.eval_step_limit), (50, 50));
    // a relative folder is read from the config's folder
    let rel = RunConfig::parse_in("[household]\ntrain_games = \"games/train\"\n", &dir).unwrap();
    assert_eq!(
        rla_train::household::config::HouseholdConfig::of(&rel).train_games,
        Some(dir.join("games/train"))
    );
}

#[test]
fn the_desktops_world_and_perturbation_are_read_and_checked() {
    use rla_desktop::tasks::family::{Perturb, World};
    use rla_train::config::SettingConfig;
    use rla_train::desktop::config::DesktopConfig;
    let dir = PathBuf::from(".");
    let c = RunConfig::parse_in(
        "setting = \"desktop\"\n[desktop]\nworld = \"sheets\"\nperturb = \"shift-down\"\n",
        &dir,
    )
    .unwrap();
    assert_eq!(DesktopConfig::of(&c).world, World::Sheets);
    assert_eq!(DesktopConfig::of(&c).perturb, Some(Perturb::ShiftDown));
    let e = RunConfig::parse_in(
        "setting = \"desktop\"\n[desktop]\nperturb = \"tilted\"\n",
        &dir,
    )
    .unwrap_err();
    let e = format!("{e:#}");
    assert!(e.contains("tilted") && e.contains("shift-right"), "{e}");
}

#[test]
fn the_trajectory_weight_is_read_with_the_trajectory_advantage_only() {
    use rla_train::config::AdvantageKind;
    let dir = PathBuf::from(".");
    let c = RunConfig::parse_in(
        "advantage = \"trajectory\"\ntrajectory_weight = 0.25\n",
        &dir,
    )
    .unwrap();
    assert_eq!(c.advantage, AdvantageKind::Trajectory);
    assert_eq!(c.trajectory_weight, Some(0.25));
    let c = RunConfig::parse_in("advantage = \"judge_centred\"\n", &dir).unwrap();
    assert_eq!(c.advantage, AdvantageKind::JudgeCentred);
    // a weight the run would not read
    let e = format!(
        "{:#}",
        RunConfig::parse_in("trajectory_weight = 0.5\n", &dir).unwrap_err()
    );
    assert!(
        e.contains("trajectory_weight") && e.contains("Paper"),
        "{e}"
    );
    let e = format!(
        "{:#}",
        RunConfig::parse_in(
            "advantage = \"trajectory\"\ntrajectory_weight = -1.0\n",
            &dir
        )
        .unwrap_err()
    );
    assert!(e.contains("must be > 0"), "{e}");
}

#[test]
fn the_anchor_keys_the_stream_and_the_update_cut_are_read_and_checked() {
    use rla_train::config::AdvantageKind;
    use rla_train::pool::Draw;
    let dir = PathBuf::from(".");
    let c = RunConfig::parse_in(
        "advantage = \"anchor\"\nanchor_gamma = 0.8\nanchor_weight = 0.5\ndraw = \"stream\"\n\
         [policy]\nupdates = 4\nwarmup_iterations = 3\nlr = 3e-4\n",
        &dir,
    )
    .unwrap();
    assert_eq!(c.advantage, AdvantageKind::Anchor);
    assert_eq!((c.anchor_gamma, c.anchor_weight), (Some(0.8), Some(0.5)));
    assert_eq!(c.draw, Draw::Stream);
    assert_eq!((c.policy.updates, c.policy.warmup_iterations), (4, 3));
    // the warm-up: a third, two thirds, then the rate itself
    let lrs: Vec<f64> = (1..=4).map(|k| c.policy.lr_at(k)).collect();
    assert!((lrs[0] - 1e-4).abs() < 1e-12 && (lrs[1] - 2e-4).abs() < 1e-12);
    assert_eq!((lrs[2], lrs[3]), (3e-4, 3e-4));
    // unset keys keep the saved config as it was
    let plain = RunConfig::parse_in("", &dir).unwrap();
    let text = toml::to_string(&plain).unwrap();
    for key in ["draw", "anchor_gamma", "updates", "warmup_iterations"] {
        assert!(!text.contains(key), "{key} in {text}");
    }
    for (bad, says) in [
        (
            "anchor_gamma = 0.9\n",
            "read only with advantage = \"anchor\"",
        ),
        (
            "advantage = \"anchor\"\nanchor_gamma = 1.5\n",
            "must be in [0, 1]",
        ),
        (
            "advantage = \"anchor\"\nanchor_weight = 0.0\n",
            "must be > 0",
        ),
        ("draw = \"sometimes\"\n", "sometimes"),
        (
            "[policy]\nupdates = 2\nmini_batch = 64\n",
            "set one of them",
        ),
    ] {
        let e = format!("{:#}", RunConfig::parse_in(bad, &dir).unwrap_err());
        assert!(e.contains(says), "{bad}: {e}");
    }
}
