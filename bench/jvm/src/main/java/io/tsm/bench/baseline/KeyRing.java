package io.tsm.bench.baseline;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.Security;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;

import javax.crypto.Cipher;

import org.apache.kafka.common.config.ConfigException;
import org.bouncycastle.jce.provider.BouncyCastleProvider;

/**
 * The RSA key ring ({@code encryption.key.pair.id}, {@code encryption.key.pairs},
 * {@code encryption.key.pairs.<id>.public.key.file} / {@code .private.key.file}; PEM, public
 * X.509 SubjectPublicKeyInfo, private PKCS#8) and DEK wrapping as docs/object-format.md
 * "Encryption (envelope)": RSA-OAEP with SHA3-512 as OAEP hash and MGF1 hash, empty label,
 * via BouncyCastle ({@code RSA/NONE/OAEPWithSHA3-512AndMGF1Padding}, as Aiven's plugin).
 * The wrapped form is {@code <keyPairId>:<base64 standard, padded>}. {@code toString} shows
 * ids only.
 */
final class KeyRing {
    private static final String RSA = "RSA/NONE/OAEPWithSHA3-512AndMGF1Padding";
    private static final SecureRandom RANDOM = new SecureRandom();

    static {
        if (Security.getProvider(BouncyCastleProvider.PROVIDER_NAME) == null) {
            Security.addProvider(new BouncyCastleProvider());
        }
    }

    private final String activeId;
    private final Map<String, PublicKey> publicKeys;
    private final Map<String, PrivateKey> privateKeys;

    private KeyRing(String activeId, Map<String, PublicKey> pub, Map<String, PrivateKey> priv) {
        this.activeId = activeId;
        this.publicKeys = pub;
        this.privateKeys = priv;
    }

    static KeyRing fromConfig(Map<String, ?> c) {
        String active = BaselineConfig.str(c, "encryption.key.pair.id");
        if (active == null) {
            throw new ConfigException("encryption.key.pair.id", null, "is required when encryption is enabled");
        }
        Map<String, PublicKey> pub = new LinkedHashMap<>();
        Map<String, PrivateKey> priv = new LinkedHashMap<>();
        for (String id : BaselineConfig.list(c, "encryption.key.pairs")) {
            if (id.contains(":")) {
                throw new ConfigException("encryption.key.pairs", id, "key-pair ids may not contain ':'");
            }
            String pubKey = "encryption.key.pairs." + id + ".public.key.file";
            String privKey = "encryption.key.pairs." + id + ".private.key.file";
            pub.put(id, (PublicKey) load(c, pubKey, false));
            priv.put(id, (PrivateKey) load(c, privKey, true));
        }
        if (!pub.containsKey(active)) {
            throw new ConfigException("encryption.key.pair.id", active, "is not listed in encryption.key.pairs");
        }
        return new KeyRing(active, pub, priv);
    }

    private static Object load(Map<String, ?> c, String key, boolean isPrivate) {
        String file = BaselineConfig.str(c, key);
        if (file == null) {
            throw new ConfigException(key, null, "is required");
        }
        try {
            String text = Files.readString(Path.of(file), StandardCharsets.US_ASCII);
            byte[] der = Base64.getMimeDecoder().decode(text.replaceAll("-----(BEGIN|END) [A-Z ]+-----", ""));
            KeyFactory kf = KeyFactory.getInstance("RSA");
            return isPrivate ? kf.generatePrivate(new PKCS8EncodedKeySpec(der))
                    : kf.generatePublic(new X509EncodedKeySpec(der));
        } catch (IOException | GeneralSecurityException | IllegalArgumentException e) {
            // The message names the file, never its content.
            throw new ConfigException(key, file, "cannot load the RSA " + (isPrivate ? "private" : "public")
                    + " key (PEM " + (isPrivate ? "PKCS#8" : "X.509") + "): " + e.getClass().getSimpleName());
        }
    }

    /** Wraps {@code dek} under the active key pair: {@code <id>:<base64>}. */
    String wrap(byte[] dek) throws GeneralSecurityException {
        Cipher c = Cipher.getInstance(RSA, BouncyCastleProvider.PROVIDER_NAME);
        c.init(Cipher.ENCRYPT_MODE, publicKeys.get(activeId), RANDOM);
        return activeId + ":" + Base64.getEncoder().encodeToString(c.doFinal(dek));
    }

    /** Unwraps a {@code dataKey}; an unknown key-pair id is an error naming it. */
    byte[] unwrap(String dataKey) throws GeneralSecurityException {
        int colon = dataKey.indexOf(':');
        if (colon <= 0 || dataKey.indexOf(':', colon + 1) >= 0) {
            throw new GeneralSecurityException("manifest dataKey is not <keyPairId>:<base64>");
        }
        String id = dataKey.substring(0, colon);
        PrivateKey key = privateKeys.get(id);
        if (key == null) {
            throw new GeneralSecurityException("manifest dataKey uses key pair '" + id
                    + "', which is not on the key ring " + privateKeys.keySet());
        }
        byte[] wrapped;
        try {
            wrapped = Base64.getDecoder().decode(dataKey.substring(colon + 1));
        } catch (IllegalArgumentException e) {
            throw new GeneralSecurityException("manifest dataKey of key pair '" + id + "' is not valid base64", e);
        }
        Cipher c = Cipher.getInstance(RSA, BouncyCastleProvider.PROVIDER_NAME);
        c.init(Cipher.DECRYPT_MODE, key);
        return c.doFinal(wrapped);
    }

    static void randomBytes(byte[] out) {
        RANDOM.nextBytes(out);
    }

    @Override
    public String toString() {
        return "KeyRing[active=" + activeId + ", ids=" + publicKeys.keySet() + "]";
    }
}
