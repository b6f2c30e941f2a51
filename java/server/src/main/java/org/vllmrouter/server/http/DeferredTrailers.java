package org.vllmrouter.server.http;

import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.HttpHeaders;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The trailer set of a decoded message's last part, made only when a trailer is added. Netty's decoder gives every
 * last part one, but a body with a length (nearly every request and answer the router sees) never has trailers: two
 * empty sets a proxied request, a twentieth of its allocation. Until the first write every read answers "none"; from
 * then on everything goes to Netty's trailer set, with its usual validation (a chunked message's trailers).
 */
final class DeferredTrailers extends HttpHeaders {
    private HttpHeaders trailers;

    private HttpHeaders made() {
        HttpHeaders t = trailers;
        if (t == null) {
            t = trailers = DefaultHttpHeadersFactory.trailersFactory().newEmptyHeaders();
        }
        return t;
    }

    @Override
    public String get(String name) {
        return trailers == null ? null : trailers.get(name);
    }

    @Override
    public Integer getInt(CharSequence name) {
        return trailers == null ? null : trailers.getInt(name);
    }

    @Override
    public int getInt(CharSequence name, int defaultValue) {
        return trailers == null ? defaultValue : trailers.getInt(name, defaultValue);
    }

    @Override
    public Short getShort(CharSequence name) {
        return trailers == null ? null : trailers.getShort(name);
    }

    @Override
    public short getShort(CharSequence name, short defaultValue) {
        return trailers == null ? defaultValue : trailers.getShort(name, defaultValue);
    }

    @Override
    public Long getTimeMillis(CharSequence name) {
        return trailers == null ? null : trailers.getTimeMillis(name);
    }

    @Override
    public long getTimeMillis(CharSequence name, long defaultValue) {
        return trailers == null ? defaultValue : trailers.getTimeMillis(name, defaultValue);
    }

    @Override
    public List<String> getAll(String name) {
        return trailers == null ? Collections.emptyList() : trailers.getAll(name);
    }

    @Override
    public List<Map.Entry<String, String>> entries() {
        return trailers == null ? Collections.emptyList() : trailers.entries();
    }

    @Override
    public boolean contains(String name) {
        return trailers != null && trailers.contains(name);
    }

    @Override
    public Iterator<Map.Entry<String, String>> iterator() {
        return trailers == null ? Collections.emptyIterator() : trailers.iterator();
    }

    @Override
    public Iterator<Map.Entry<CharSequence, CharSequence>> iteratorCharSequence() {
        return trailers == null ? Collections.emptyIterator() : trailers.iteratorCharSequence();
    }

    @Override
    public boolean isEmpty() {
        return trailers == null || trailers.isEmpty();
    }

    @Override
    public int size() {
        return trailers == null ? 0 : trailers.size();
    }

    @Override
    public Set<String> names() {
        return trailers == null ? Collections.emptySet() : trailers.names();
    }

    @Override
    public HttpHeaders add(String name, Object value) {
        made().add(name, value);
        return this;
    }

    @Override
    public HttpHeaders add(String name, Iterable<?> values) {
        made().add(name, values);
        return this;
    }

    @Override
    public HttpHeaders addInt(CharSequence name, int value) {
        made().addInt(name, value);
        return this;
    }

    @Override
    public HttpHeaders addShort(CharSequence name, short value) {
        made().addShort(name, value);
        return this;
    }

    @Override
    public HttpHeaders set(String name, Object value) {
        made().set(name, value);
        return this;
    }

    @Override
    public HttpHeaders set(String name, Iterable<?> values) {
        made().set(name, values);
        return this;
    }

    @Override
    public HttpHeaders setInt(CharSequence name, int value) {
        made().setInt(name, value);
        return this;
    }

    @Override
    public HttpHeaders setShort(CharSequence name, short value) {
        made().setShort(name, value);
        return this;
    }

    @Override
    public HttpHeaders remove(String name) {
        if (trailers != null) {
            trailers.remove(name);
        }
        return this;
    }

    @Override
    public HttpHeaders clear() {
        if (trailers != null) {
            trailers.clear();
        }
        return this;
    }
}
