package org.vllmrouter.server;

import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.concurrent.atomic.AtomicLong;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A certificate authority made by a test, as an operator would run one for a private cluster: a self-signed CA and
 * the server certificates it issues to workers. EC P-256 keys, so making them costs milliseconds.
 */
final class TestPki {
    private static final AtomicLong SERIAL = new AtomicLong(System.currentTimeMillis());

    /** A worker's certificate (issued by {@link #ca}) and private key. */
    record Issued(X509Certificate certificate, PrivateKey key, X509Certificate ca) {
        /** A server context presenting this certificate and its CA, as a TLS-terminating worker does. */
        SslContext serverContext() {
            try {
                return SslContextBuilder.forServer(key, certificate, ca).build();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    private final X509Certificate ca;
    private final KeyPair caKeys;

    private TestPki(X509Certificate ca, KeyPair caKeys) {
        this.ca = ca;
        this.caKeys = caKeys;
    }

    static TestPki newCa(String name) {
        KeyPair keys = keyPair();
        X500Name subject = new X500Name("CN=" + name);
        X509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(subject, serial(), notBefore(), notAfter(),
                subject, keys.getPublic());
        try {
            builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
            builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new TestPki(sign(builder, keys.getPrivate()), keys);
    }

    /** A server certificate for the given DNS names, issued by this CA. */
    Issued issue(String... dnsNames) {
        KeyPair keys = keyPair();
        GeneralName[] names = new GeneralName[dnsNames.length];
        for (int i = 0; i < dnsNames.length; i++) {
            names[i] = new GeneralName(GeneralName.dNSName, dnsNames[i]);
        }
        X509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(ca, serial(), notBefore(), notAfter(),
                new X500Name("CN=" + dnsNames[0]), keys.getPublic());
        try {
            builder.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(names));
            builder.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new Issued(sign(builder, caKeys.getPrivate()), keys.getPrivate(), ca);
    }

    /** The CA certificate as a PEM bundle in {@code dir}, the form {@code SSL_CERT_FILE} names. */
    Path writeCaBundle(Path dir) throws IOException {
        StringWriter pem = new StringWriter();
        try (JcaPEMWriter writer = new JcaPEMWriter(pem)) {
            writer.writeObject(ca);
        }
        return Files.writeString(dir.resolve("ca-" + ca.getSerialNumber() + ".pem"), pem.toString());
    }

    private static KeyPair keyPair() {
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
            generator.initialize(new ECGenParameterSpec("secp256r1"));
            return generator.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static X509Certificate sign(X509v3CertificateBuilder builder, PrivateKey issuerKey) {
        try {
            return new JcaX509CertificateConverter().getCertificate(
                    builder.build(new JcaContentSignerBuilder("SHA256withECDSA").build(issuerKey)));
        } catch (OperatorCreationException | GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static BigInteger serial() {
        return BigInteger.valueOf(SERIAL.incrementAndGet());
    }

    private static Date notBefore() {
        return Date.from(Instant.now().minus(Duration.ofHours(1)));
    }

    private static Date notAfter() {
        return Date.from(Instant.now().plus(Duration.ofDays(1)));
    }
}
