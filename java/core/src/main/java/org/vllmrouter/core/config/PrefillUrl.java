package org.vllmrouter.core.config;

import com.fasterxml.jackson.annotation.JsonFormat;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;

/** A prefill worker as RouterArgs holds it: the JSON pair {@code [url, bootstrap_port_or_null]}. */
@JsonFormat(shape = JsonFormat.Shape.ARRAY)
@JsonPropertyOrder({"url", "bootstrapPort"})
public record PrefillUrl(String url, Integer bootstrapPort) {
}
