use rla_train::config::RunConfig;
fn main() {
    let text = std::fs::read_to_string("configs/household-base.toml").unwrap();
    let mut cfg: RunConfig = RunConfig::parse_in(&text, std::path::Path::new("configs")).unwrap();
    cfg.pretrain.tasks = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(100);
    let t0 = std::time::Instant::now();
    let tasks = rla_train::household::probe::household_train_tasks(&cfg);
    let t1 = t0.elapsed();
    let (pol, jud) = rla_train::household::warm::demonstration_steps(&tasks, &cfg, 0).unwrap();
    let t2 = t0.elapsed();
    let words = |s: &str| {
        s.split(|c: char| c.is_whitespace() || c == ',' || c == ':' || c == '.')
            .filter(|w| !w.is_empty())
            .count()
    };
    let pw: Vec<usize> = pol.iter().map(|d| words(&d.prompt)).collect();
    let jw: Vec<usize> = jud.iter().map(|d| words(&d.0)).collect();
    let mean = |v: &[usize]| v.iter().sum::<usize>() as f64 / v.len() as f64;
    let mx = |v: &[usize]| *v.iter().max().unwrap();
    println!(
        "tasks {} in {:?}; demos {} steps in {:?}",
        tasks.len(),
        t1,
        pol.len(),
        t2 - t1
    );
    println!(
        "policy prompt words mean {:.0} max {}; judge mean {:.0} max {}",
        mean(&pw),
        mx(&pw),
        mean(&jw),
        mx(&jw)
    );
    println!("--- example\n{}\n---", pol[pol.len() / 2].prompt);
}
