package io.tsm.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.util.Base64;

/**
 * Generates the benchmark's RSA 2048 key pair at run time into the scratch dir (never
 * committed): {@code public.pem} (X.509 SubjectPublicKeyInfo) and {@code private.pem}
 * (PKCS#8, mode 0600), the PEM forms both plugins read. Idempotent: existing files are kept.
 */
final class Pem {
    private Pem() {}

    static void ensureKeyPair(Path dir) throws IOException, GeneralSecurityException {
        Path pub = dir.resolve("public.pem");
        Path priv = dir.resolve("private.pem");
        if (Files.isRegularFile(pub) && Files.isRegularFile(priv)) {
            return;
        }
        Files.createDirectories(dir);
        KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
        g.initialize(2048);
        KeyPair kp = g.generateKeyPair();
        Path tmpPriv = dir.resolve("private.pem.tmp");
        Files.deleteIfExists(tmpPriv);
        Files.createFile(tmpPriv, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(tmpPriv, pem("PRIVATE KEY", kp.getPrivate().getEncoded()));
        Files.writeString(dir.resolve("public.pem.tmp"), pem("PUBLIC KEY", kp.getPublic().getEncoded()));
        Files.move(dir.resolve("public.pem.tmp"), pub, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        Files.move(tmpPriv, priv, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }

    private static String pem(String label, byte[] der) {
        String body = Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der);
        return "-----BEGIN " + label + "-----\n" + body + "\n-----END " + label + "-----\n";
    }
}
