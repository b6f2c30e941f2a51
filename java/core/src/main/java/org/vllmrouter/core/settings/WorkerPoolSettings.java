package org.vllmrouter.core.settings;

import java.nio.file.Path;
import java.util.List;
import org.vllmrouter.core.config.PdMode;
import org.vllmrouter.core.config.PrefillUrl;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.config.StartEnvironment;

/**
 * The workers a router starts with and how it calls them.
 *
 * @param apiKey the key sent to workers (null or empty: none)
 * @param certFile a PEM bundle of CAs trusted for {@code https} workers besides the JVM's own; null for none
 */
public record WorkerPoolSettings(List<String> workerUrls, List<PrefillUrl> prefillUrls, List<String> decodeUrls,
                                 PdMode pdMode, String apiKey, Path certFile) {
    public static WorkerPoolSettings from(RouterConfig c, StartEnvironment env) {
        String certFile = env.certFile();
        return new WorkerPoolSettings(c.workerUrls(), c.prefillUrls(), c.decodeUrls(), c.pdMode(), c.apiKey(),
                certFile == null || certFile.isEmpty() ? null : Path.of(certFile));
    }
}
