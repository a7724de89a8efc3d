//! Which endpoint serves a prompt: cache-aware routing by prompt prefix, the least-loaded live
//! endpoint otherwise, endpoints that failed skipped for a while, and requests run concurrently.

use super::*;

/// Tokens per block of prefix hashes (vLLM's prefix cache block).
pub(super) const BLOCK: usize = 16;

/// Most prefix hashes remembered per endpoint before they are forgotten.
pub(super) const MAX_PREFIXES: usize = 1 << 16;

/// A hash of every block-aligned prefix of a prompt, and of the whole prompt, shortest first.
pub(super) fn prefix_hashes(prompt: &[u32]) -> Vec<u64> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let mut out = Vec::with_capacity(prompt.len() / BLOCK + 1);
    for (i, t) in prompt.iter().enumerate() {
        t.hash(&mut h);
        if (i + 1) % BLOCK == 0 || i + 1 == prompt.len() {
            let mut f = h.clone();
            (i + 1).hash(&mut f);
            out.push(f.finish());
        }
    }
    out
}

/// Cache-aware routing of a batch: for each prompt (by its prefix hashes), the endpoint among
/// `live` whose served prefixes cover most of it, when that is at least half; else the one with
/// the fewest prompts of this batch plus requests in flight (`load`), turns (`turn`) breaking
/// ties. No endpoint takes more than `⌈1.25·N / live⌉` prompts. Each prompt's prefixes are
/// added to its endpoint's set.
pub(super) fn route(
    prompts: &[Vec<u64>],
    live: &[usize],
    prefixes: &mut [HashSet<u64>],
    load: &[usize],
    turn: usize,
) -> Vec<usize> {
    let cap = (prompts.len() * 5).div_ceil(4 * live.len().max(1)).max(1);
    let mut taken = vec![0usize; prefixes.len()];
    let mut out = Vec::with_capacity(prompts.len());
    for (p, hashes) in prompts.iter().enumerate() {
        let open: Vec<usize> = live.iter().copied().filter(|&e| taken[e] < cap).collect();
        let matched = |e: usize| {
            hashes
                .iter()
                .rposition(|h| prefixes[e].contains(h))
                .map_or(0, |i| i + 1)
        };
        let best = open
            .iter()
            .copied()
            .map(|e| (matched(e), e))
            .max_by_key(|&(m, e)| (m, std::cmp::Reverse(e)));
        let n = prefixes.len().max(1);
        let e = match best {
            Some((m, e)) if m > 0 && 2 * m >= hashes.len() => e,
            _ => open
                .iter()
                .copied()
                .min_by_key(|&e| (taken[e] + load[e], (e + n - (turn + p) % n) % n))
                .unwrap_or(live[0]),
        };
        taken[e] += 1;
        if prefixes[e].len() + hashes.len() > MAX_PREFIXES {
            prefixes[e].clear();
        }
        prefixes[e].extend(hashes.iter().copied());
        out.push(e);
    }
    out
}

impl<C: Codec> RemoteSampler<C> {
    pub(super) fn live(&self, i: usize, now: Instant) -> bool {
        self.endpoints[i]
            .down_until
            .lock()
            .map(|d| d.is_none_or(|t| t <= now))
            .unwrap_or(true)
    }

    /// The endpoints not cooling down (every one, if all are).
    pub(super) fn live_endpoints(&self) -> Vec<usize> {
        let now = Instant::now();
        let live: Vec<usize> = (0..self.endpoints.len())
            .filter(|&i| self.live(i, now))
            .collect();
        if live.is_empty() {
            (0..self.endpoints.len()).collect()
        } else {
            live
        }
    }

    /// The endpoint for each prompt (cache-aware routing over the live endpoints).
    pub(super) fn route(&self, prompts: &[&[u32]]) -> Vec<usize> {
        let live = self.live_endpoints();
        if live.len() == 1 && self.endpoints.len() == 1 {
            return vec![live[0]; prompts.len()];
        }
        let hashes: Vec<Vec<u64>> = prompts.iter().map(|p| prefix_hashes(p)).collect();
        let mut sets: Vec<HashSet<u64>> = self
            .endpoints
            .iter()
            .map(|e| std::mem::take(&mut *e.prefixes.lock().unwrap_or_else(|x| x.into_inner())))
            .collect();
        let load: Vec<usize> = self
            .endpoints
            .iter()
            .map(|e| e.in_flight.load(Ordering::Relaxed))
            .collect();
        let turn = self.turn.fetch_add(1, Ordering::Relaxed);
        let out = route(&hashes, &live, &mut sets, &load, turn);
        for (e, set) in self.endpoints.iter().zip(sets) {
            *e.prefixes.lock().unwrap_or_else(|x| x.into_inner()) = set;
        }
        out
    }

    /// The least-loaded live endpoint other than `skip` (any, if none is), taking turns among
    /// equals.
    pub(super) fn pick(&self, skip: Option<usize>) -> usize {
        let now = Instant::now();
        let order: Vec<usize> = (0..self.endpoints.len()).collect();
        let candidates: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| self.live(i, now) && Some(i) != skip)
            .collect();
        let pool = if candidates.is_empty() {
            order
        } else {
            candidates
        };
        let n = self.endpoints.len();
        let turn = self.turn.fetch_add(1, Ordering::Relaxed);
        pool.into_iter()
            .min_by_key(|&i| {
                (
                    self.endpoints[i].in_flight.load(Ordering::Relaxed),
                    (i + n - turn % n) % n,
                )
            })
            .unwrap_or(0)
    }

    /// Takes an endpoint out for the cooldown; one that could not be reached gets the current
    /// weights again when it is back (it may have restarted).
    pub(super) fn fail(&self, i: usize, unreachable: bool) {
        let ep = &self.endpoints[i];
        if let Ok(mut d) = ep.down_until.lock() {
            *d = Some(Instant::now() + self.cfg.cooldown);
        }
        if unreachable {
            ep.version.store(0, Ordering::Relaxed);
        }
    }

    /// Runs `jobs` with at most `concurrency` in flight, in order.
    pub(super) fn concurrently<T: Send>(
        &self,
        jobs: usize,
        f: impl Fn(usize) -> Result<T, RemoteError> + Sync,
    ) -> Result<Vec<T>, RemoteError> {
        let width = self.cfg.concurrency.max(1);
        let mut out: Vec<Option<Result<T, RemoteError>>> = (0..jobs).map(|_| None).collect();
        for chunk in (0..jobs).collect::<Vec<_>>().chunks(width) {
            let done: Vec<(usize, Result<T, RemoteError>)> = std::thread::scope(|s| {
                let hs: Vec<_> = chunk
                    .iter()
                    .map(|&i| {
                        let f = &f;
                        (i, s.spawn(move || f(i)))
                    })
                    .collect();
                hs.into_iter()
                    .map(|(i, h)| {
                        (
                            i,
                            h.join().unwrap_or_else(|_| {
                                Err(RemoteError::Transport {
                                    url: String::new(),
                                    message: "a request thread panicked".into(),
                                })
                            }),
                        )
                    })
                    .collect()
            });
            for (i, r) in done {
                out[i] = Some(r);
            }
        }
        out.into_iter().map(|r| r.expect("every job ran")).collect()
    }
}
