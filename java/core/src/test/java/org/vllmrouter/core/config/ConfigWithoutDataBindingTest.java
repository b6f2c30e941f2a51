package org.vllmrouter.core.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;

/**
 * Reading and writing the configuration needs Jackson's streaming core only. Data binding loaded some 1,200
 * classes for this one document, and every router process kept their metadata resident; these tests load the config
 * classes where data binding is not on the class path at all, so a config path that reaches for it again fails here.
 */
class ConfigWithoutDataBindingTest {

    @Test
    void configIsReadAndWrittenWithoutDataBindingOnTheClassPath() throws Exception {
        try (URLClassLoader loader = coreAndStreamingJacksonOnly()) {
            Class<?> config = Class.forName(RouterConfig.class.getName(), true, loader);
            String given = "{\"port\": 8001, \"prefill_urls\": [[\"http://p:1\", 9000]], \"selector\": {\"a\": \"b\"}}";
            Object read = config.getMethod("fromJson", String.class).invoke(null, given);
            assertEquals(8001, config.getMethod("port").invoke(read));
            String json = (String) config.getMethod("toJson").invoke(read);
            assertEquals(RouterConfig.fromJson(json), RouterConfig.fromJson(RouterConfig.fromJson(json).toJson()));
            assertEquals(RouterConfig.fromJson(json).toJson(), json);
        }
    }

    @Test
    void theCheckItselfWouldSeeDataBinding() throws Exception {
        try (URLClassLoader loader = coreAndStreamingJacksonOnly()) {
            assertThrows(ClassNotFoundException.class,
                    () -> Class.forName(ObjectMapper.class.getName(), false, loader));
        }
    }

    @Test
    void badConfigStillFailsWithItsMessage() throws Exception {
        try (URLClassLoader loader = coreAndStreamingJacksonOnly()) {
            Method fromJson = Class.forName(RouterConfig.class.getName(), true, loader)
                    .getMethod("fromJson", String.class);
            InvocationTargetException e = assertThrows(InvocationTargetException.class,
                    () -> fromJson.invoke(null, "{\"port\": \"x\"}"));
            assertEquals("Invalid value for config field 'port': \"x\" (expected a whole number)",
                    e.getCause().getMessage());
        }
    }

    /** This module's classes and jackson-core, over the platform loader: no data binding, no annotations jar. */
    private static URLClassLoader coreAndStreamingJacksonOnly() {
        URL core = RouterConfig.class.getProtectionDomain().getCodeSource().getLocation();
        URL streaming = JsonFactory.class.getProtectionDomain().getCodeSource().getLocation();
        return new URLClassLoader(new URL[] {core, streaming}, ClassLoader.getPlatformClassLoader());
    }
}
