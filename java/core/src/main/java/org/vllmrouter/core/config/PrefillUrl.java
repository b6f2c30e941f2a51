package org.vllmrouter.core.config;

/** A prefill worker as RouterArgs holds it: the JSON pair {@code [url, bootstrap_port_or_null]}. */
public record PrefillUrl(String url, Integer bootstrapPort) {
}
