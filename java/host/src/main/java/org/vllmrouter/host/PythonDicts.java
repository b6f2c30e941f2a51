package org.vllmrouter.host;

import java.util.Map;

import org.graalvm.polyglot.Value;

/**
 * Java maps handed to Python code in this JVM as the {@code dict}s {@code json.loads} would make of
 * their JSON ({@code vllm_router.bridge.graal}): the in-process bridge's answers then have the
 * process bridge's types without text being written in Java and decoded by interpreted Python.
 */
public final class PythonDicts {

    private PythonDicts() {}

    /**
     * A new Python dict, made by {@code dictType} (Python's {@code dict}, passed by the caller so
     * this needs no context of its own), with {@code map}'s entries in order; a value that is a map
     * becomes a dict too. Keys and the other values (strings, numbers, booleans) cross as themselves.
     */
    public static Value of(Map<String, ?> map, Value dictType) {
        Value dict = dictType.execute();
        map.forEach((key, value) -> dict.putHashEntry(key, value instanceof Map<?, ?> inner ? of(stringKeyed(inner), dictType) : value));
        return dict;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, ?> stringKeyed(Map<?, ?> map) {
        return (Map<String, ?>) map;
    }
}
