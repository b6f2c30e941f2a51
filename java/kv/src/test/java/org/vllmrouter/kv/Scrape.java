package org.vllmrouter.kv;

import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;

/** Reads one series from a registry, as a scrape would see it; 0 when it does not exist. */
final class Scrape {

    private Scrape() {}

    /** {@code labels}: name, value, name, value... */
    static double value(PrometheusRegistry registry, String name, String... labels) {
        String base = name.endsWith("_total") ? name.substring(0, name.length() - "_total".length()) : name;
        Labels wanted = Labels.of(labels);
        for (MetricSnapshot s : registry.scrape()) {
            if (!s.getMetadata().getName().equals(base)) {
                continue;
            }
            if (s instanceof CounterSnapshot c) {
                for (CounterSnapshot.CounterDataPointSnapshot p : c.getDataPoints()) {
                    if (matches(p.getLabels(), wanted)) {
                        return p.getValue();
                    }
                }
            } else if (s instanceof GaugeSnapshot g) {
                for (GaugeSnapshot.GaugeDataPointSnapshot p : g.getDataPoints()) {
                    if (matches(p.getLabels(), wanted)) {
                        return p.getValue();
                    }
                }
            }
        }
        return 0;
    }

    private static boolean matches(Labels have, Labels wanted) {
        for (int i = 0; i < wanted.size(); i++) {
            if (!wanted.getValue(i).equals(have.get(wanted.getName(i)))) {
                return false;
            }
        }
        return true;
    }
}
