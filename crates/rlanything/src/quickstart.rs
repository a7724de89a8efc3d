//! `rlanything quickstart`: the main job, end to end, with default settings.

use anyhow::Result;
use rla_core::advantage::policy_advantages;
use rla_core::consistency::consistency_advantages;
use rla_core::reward::{step_reward, Outcome, StepScore};

#[derive(clap::Args)]
pub struct Args {
    /// Seed of every random choice.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

pub fn run(_a: Args) -> Result<()> {
    use StepScore::{Negative as N, Positive as P};
    println!("== RLAnything rewards on the paper's worked example (m = 3, λ = 1) ==");
    let rollouts = [
        (Outcome::Success, [P, P, P]),
        (Outcome::Success, [P, N, P]),
        (Outcome::Success, [N, N, P]),
        (Outcome::Failure, [P, P, P]),
        (Outcome::Failure, [P, N, N]),
        (Outcome::Failure, [N, N, N]),
    ];
    let rewards: Vec<Vec<f64>> = rollouts
        .iter()
        .map(|(o, s)| vec![step_reward(*o, s, 1.0)])
        .collect();
    let adv = policy_advantages(&rewards);
    println!(
        "{:<9} {:<12} {:>7} {:>10}   consistency advantages",
        "outcome", "verdicts", "R_i", "A_i"
    );
    for (((o, s), r), a) in rollouts.iter().zip(&rewards).zip(&adv) {
        let c = consistency_advantages(r[0], s);
        let verdicts: Vec<&str> = s
            .iter()
            .map(|v| if *v == P { "+1" } else { "-1" })
            .collect();
        let cs: Vec<String> = c
            .iter()
            .map(|x| {
                x.map(|v| format!("{v:+.2}"))
                    .unwrap_or_else(|| "skip".into())
            })
            .collect();
        println!(
            "{:<9} {:<12} {:>7.2} {:>10}   {}",
            format!("{o:?}"),
            verdicts.join(","),
            r[0],
            a[0].map(|v| format!("{v:+.2}"))
                .unwrap_or_else(|| "drop".into()),
            cs.join(" ")
        );
    }
    println!();
    print!(
        "{}",
        crate::theory_cmd::table(&[0.8, 1.0, 1.2, 1.4, 1.6], &[1, 3, 9, 27])
    );
    Ok(())
}
