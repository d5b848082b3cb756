//! The store's instruments for several nodes on one schema: lease renewals late or
//! failed, a node cutting itself off and holding the database again, connections
//! opened again. Names are documented in docs/observability.md.

use std::sync::OnceLock;

use opentelemetry::metrics::Counter;

pub(crate) struct Metrics {
    renewals: Counter<u64>,
    cut_offs: Counter<u64>,
    regained: Counter<u64>,
    connections: Counter<u64>,
}

pub(crate) fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let meter = opentelemetry::global::meter(fundi_runtime::telemetry::METER_NAME);
        let metrics = Metrics {
            renewals: meter
                .u64_counter("fundi.lease.renewals.missed")
                .with_description(
                    "Lease renewals that failed or came late (more than half a period), by outcome",
                )
                .with_unit("{renewal}")
                .build(),
            cut_offs: meter
                .u64_counter("fundi.node.cut_offs")
                .with_description(
                    "Times this node cut itself off: its leases were not renewed within the renew deadline",
                )
                .with_unit("{event}")
                .build(),
            regained: meter
                .u64_counter("fundi.node.regained")
                .with_description("Times this node held the database again after a cut-off")
                .with_unit("{event}")
                .build(),
            connections: meter
                .u64_counter("fundi.store.connections.opened")
                .with_description(
                    "Connections to PostgreSQL opened (beyond the first: reconnects after a drop)",
                )
                .with_unit("{connection}")
                .build(),
        };
        // Zero from the start, so that a dashboard reads them before their first event.
        for outcome in ["late", "failed"] {
            metrics.renewals.add(0, &[opentelemetry::KeyValue::new("outcome", outcome)]);
        }
        metrics.cut_offs.add(0, &[]);
        metrics.regained.add(0, &[]);
        metrics
    })
}

impl Metrics {
    pub(crate) fn renewal_late(&self) {
        self.renewals
            .add(1, &[opentelemetry::KeyValue::new("outcome", "late")]);
    }

    pub(crate) fn renewal_failed(&self) {
        self.renewals
            .add(1, &[opentelemetry::KeyValue::new("outcome", "failed")]);
    }

    pub(crate) fn self_fenced(&self) {
        self.cut_offs.add(1, &[]);
    }

    pub(crate) fn regained(&self) {
        self.regained.add(1, &[]);
    }

    pub(crate) fn connection_opened(&self) {
        self.connections.add(1, &[]);
    }
}
