//! Lookups per second against the built-in IP-range snapshot (`cargo bench --bench lookup`).
//! Prints one line per address family; also the snapshot's size and date, and the cost of the
//! first lookup in a process (opening the snapshot where it lies + one lookup): the median of
//! 30 fresh processes (this executable started again with `LOCALITY_BENCH_FIRST_LOOKUP=1`).

#![allow(clippy::print_stdout)] // a benchmark prints its figures

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Instant;

/// The first lookup of this process, in microseconds.
fn first_lookup() -> f64 {
    let started = Instant::now();
    let hit = locality::ranges::builtin().lookup(black_box(IpAddr::V4(Ipv4Addr::new(3, 112, 1, 1))));
    let elapsed = started.elapsed();
    assert!(hit.is_some());
    elapsed.as_secs_f64() * 1e6
}

fn main() {
    if std::env::var_os("LOCALITY_BENCH_FIRST_LOOKUP").is_some() {
        println!("{:.1}", first_lookup());
        return;
    }
    let exe = std::env::current_exe().expect("the bench executable");
    let mut firsts: Vec<f64> = (0..30)
        .map(|_| {
            let out = std::process::Command::new(&exe)
                .env("LOCALITY_BENCH_FIRST_LOOKUP", "1")
                .output()
                .expect("the bench runs again");
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse()
                .expect("microseconds")
        })
        .collect();
    firsts.sort_by(f64::total_cmp);
    let table = locality::ranges::builtin();
    println!(
        "snapshot: {} bytes in the binary, {} ranges, dated {}",
        locality::ranges::SNAPSHOT.len(),
        table.len(),
        table.date,
    );
    println!(
        "first-lookup: {:.3} ms (median of 30 processes; min {:.3}, max {:.3}): open the built-in snapshot in place + one lookup",
        firsts[15] / 1e3,
        firsts[0] / 1e3,
        firsts[29] / 1e3
    );
    // Addresses: half inside published ranges (their network address + 1), half random.
    let mut rng = fastrand::Rng::with_seed(7);
    for (family, v6) in [("IPv4", false), ("IPv6", true)] {
        let inside: Vec<IpAddr> = table
            .ranges()
            .filter(|r| r.net.addr().is_ipv6() == v6)
            .step_by(7)
            .map(|r| match r.net.network() {
                IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a).wrapping_add(1))),
                IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(u128::from(a).wrapping_add(1))),
            })
            .collect();
        let mut ips = inside.clone();
        for _ in 0..inside.len() {
            ips.push(if v6 {
                IpAddr::V6(Ipv6Addr::from(rng.u128(..)))
            } else {
                IpAddr::V4(Ipv4Addr::from(rng.u32(..)))
            });
        }
        let rounds = 2_000_000 / ips.len().max(1) + 1;
        let mut found = 0usize;
        let t = Instant::now();
        for _ in 0..rounds {
            for ip in &ips {
                found += usize::from(black_box(table.lookup(*ip)).is_some());
            }
        }
        let n = rounds * ips.len();
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{family}: {:.2} million lookups/s ({n} lookups in {:.2} s, {:.0}% found)",
            n as f64 / secs / 1e6,
            secs,
            100.0 * found as f64 / n as f64
        );
    }
}
