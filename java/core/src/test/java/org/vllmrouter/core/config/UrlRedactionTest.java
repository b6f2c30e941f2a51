package org.vllmrouter.core.config;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class UrlRedactionTest {
    @Test
    void userInfoIsReplacedAndEverythingElseKept() {
        assertEquals("http://***@w1:8000", UrlRedaction.redact("http://user:secret@w1:8000"));
        assertEquals("http://***@w1:8000/v1?x=1", UrlRedaction.redact("http://user:secret@w1:8000/v1?x=1"));
        assertEquals("redis://***@cache:6379/0", UrlRedaction.redact("redis://:secret@cache:6379/0"));
        assertEquals("http://***@w1:8000@3", UrlRedaction.redact("http://user:secret@w1:8000@3"));
    }

    @Test
    void urlsWithoutUserInfoAreUnchanged() {
        for (String url : new String[] {"http://w1:8000", "http://w1:8000@3", "http://w1:8000/a@b", "w1:8000", ""}) {
            assertEquals(url, UrlRedaction.redact(url));
        }
    }
}
