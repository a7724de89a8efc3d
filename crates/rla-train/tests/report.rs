//! The report draws its plots from the metrics.

use rla_train::plots::write_plots;
use rla_train::run::IterMetrics;

#[test]
fn plots_are_drawn_as_png() {
    let dir = tempfile::tempdir().unwrap();
    let ms: Vec<IterMetrics> = (0..5)
        .map(|i| IterMetrics {
            iteration: i,
            train_success: 0.1 * i as f64,
            mu: Some(1.0 + 0.05 * i as f64),
            bound: Some(0.01 * i as f64),
            precision: Some(0.5),
            process_acc: Some(0.6),
            outcome_acc: Some(0.7),
            accepted: i % 2,
            eval_in_domain: (i % 2 == 0).then_some(0.2),
            eval_ood: (i % 2 == 0).then_some(0.1),
            vitals: rla_train::vitals::Vitals {
                policy: rla_train::vitals::RoleVitals {
                    clip_fraction: Some(0.05 * i as f64),
                    update_kl_decision: Some(0.002 * i as f64),
                    entropy: Some(1.0 - 0.1 * i as f64),
                    ..Default::default()
                },
                ..Default::default()
            },
            ..Default::default()
        })
        .collect();
    let files = write_plots(dir.path(), &ms).unwrap();
    assert_eq!(
        files,
        [
            "success.png",
            "judge.png",
            "theory.png",
            "vitals.png",
            "accepted.png"
        ]
    );
    for f in files {
        let bytes = std::fs::read(dir.path().join(&f)).unwrap();
        assert_eq!(&bytes[1..4], b"PNG", "{f}");
        assert!(bytes.len() > 10_000, "{f} looks empty");
    }
    // the report's table of vital signs has a row a trained iteration
    let t = rla_train::report::vitals_table(&ms);
    assert_eq!(t.lines().count(), 2 + 4, "{t}");
    assert!(t.contains("| 4 | 0.200 |"), "{t}");
}
