//! The `locality_anycast_check` schema. Its descriptions are the data source's documentation.

use crate::tfplugin::{Attribute, Block, NestedBlock, Nesting, Schema, Type};

/// The data source schema.
pub fn schema() -> Schema {
    Schema {
        version: 0,
        block: Block::new(
            "Whether an origin is anycast (or behind a cloud's regional front end), from latency probes: a pair of \
             probes whose half round-trip times add up to less than the great-circle distance between them divided \
             by the speed of light in fiber (about 204 km/ms) cannot be reaching one physical location. Such an \
             origin needs a `locality_region_hint` for Smart Tiered Cache to pick the right upper tier.\n\n\
             **Probes.** At least two; more make a violation likelier to show (every pair is checked). Choose \
             places far apart (different continents): two probes 500 km apart cannot prove anything for an origin \
             a few milliseconds away. **Where RTTs come from**: this data source does not measure anything (it \
             runs offline, in the plan): the round-trip times are yours to measure from each place, e.g. the \
             minimum of several `ping` or TCP-connect times from a VM or a monitoring probe there (RIPE Atlas, your \
             synthetic-monitoring agents), and to pass in, typically from a variable or a file a CI job writes. Use \
             minimums, not averages: queueing only adds time, so the minimum is the closest to the speed-of-light \
             bound, and a too-large RTT can hide anycast but never fake it.",
        )
        .attribute(
            Attribute::bool("anycast")
                .computed()
                .description("True when at least one pair of probes is faster than light allows for one location."),
        )
        .attribute(
            Attribute::typed(
                "violations",
                Type::list(Type::object([
                    ("probe_a", Type::String),
                    ("probe_b", Type::String),
                    ("distance_km", Type::Number),
                    ("margin_ms", Type::Number),
                ])),
            )
            .computed()
            .description(
                "The impossible pairs, largest margin first: the probes, the distance between them (km, 0.1 km) and \
                 the margin (ms, 0.01 ms) by which their half round-trip times beat light in fiber.",
            ),
        )
        .block(NestedBlock::new(
            "probe",
            Nesting::List,
            Block::new("A latency measurement from a known place to the origin. At least two.")
                .attribute(
                    Attribute::string("name")
                        .required()
                        .description("A unique name, e.g. `nrt` or `tokyo`."),
                )
                .attribute(
                    Attribute::number("latitude")
                        .required()
                        .description("Degrees, -90 to 90."),
                )
                .attribute(
                    Attribute::number("longitude")
                        .required()
                        .description("Degrees, -180 to 180."),
                )
                .attribute(
                    Attribute::number("rtt_ms")
                        .required()
                        .description("Round-trip time to the origin, ms, greater than 0."),
                ),
        )),
    }
}
