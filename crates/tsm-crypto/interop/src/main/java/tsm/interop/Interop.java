package tsm.interop;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.Security;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Arrays;
import java.util.Base64;
import java.util.stream.Stream;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.bouncycastle.jce.provider.BouncyCastleProvider;

/**
 * Java half of tsm-crypto's interop test, doing what Aiven's tiered-storage plugin does:
 * RSA/NONE/OAEPWithSHA3-512AndMGF1Padding (BouncyCastle) for the DEK and the JCE's
 * AES/GCM/NoPadding for chunks stored as IV(12) || ciphertext || tag(16).
 *
 * <p>Usage: Interop DIR. Reads from DIR (written by tests/java_interop.rs): public.pem,
 * private.pem, key-id.txt, dek.bin, aad.bin, rust-wrapped.txt, plain-N.bin,
 * rust-chunk-N.bin. Checks Rust's outputs, then writes java-dek.bin, java-wrapped.txt and
 * java-chunk-N.bin for the Rust side to check. Throws (so Maven exits non-zero) on any mismatch.
 */
public final class Interop {
  private static final String RSA = "RSA/NONE/OAEPWithSHA3-512AndMGF1Padding";
  private static final String AES = "AES/GCM/NoPadding";

  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      throw new IllegalArgumentException("usage: Interop DIR");
    }
    Security.addProvider(new BouncyCastleProvider());
    Path dir = Path.of(args[0]);
    KeyFactory rsa = KeyFactory.getInstance("RSA");
    PublicKey publicKey = rsa.generatePublic(new X509EncodedKeySpec(pem(dir.resolve("public.pem"))));
    PrivateKey privateKey = rsa.generatePrivate(new PKCS8EncodedKeySpec(pem(dir.resolve("private.pem"))));
    String keyId = Files.readString(dir.resolve("key-id.txt"), StandardCharsets.UTF_8).trim();
    byte[] dek = Files.readAllBytes(dir.resolve("dek.bin"));
    byte[] aad = Files.readAllBytes(dir.resolve("aad.bin"));

    // 1. Unwrap Rust's dataKey with BouncyCastle.
    String rustWrapped = Files.readString(dir.resolve("rust-wrapped.txt"), StandardCharsets.UTF_8).trim();
    int colon = rustWrapped.indexOf(':');
    check(colon > 0 && rustWrapped.substring(0, colon).equals(keyId), "dataKey id prefix");
    Cipher unwrap = Cipher.getInstance(RSA, BouncyCastleProvider.PROVIDER_NAME);
    unwrap.init(Cipher.DECRYPT_MODE, privateKey);
    byte[] unwrapped = unwrap.doFinal(Base64.getDecoder().decode(rustWrapped.substring(colon + 1)));
    check(Arrays.equals(unwrapped, dek), "BouncyCastle unwrap of the Rust-wrapped DEK");

    // 2. Wrap a fresh DEK with BouncyCastle for Rust to unwrap.
    byte[] javaDek = new byte[32];
    new SecureRandom().nextBytes(javaDek);
    Cipher wrap = Cipher.getInstance(RSA, BouncyCastleProvider.PROVIDER_NAME);
    wrap.init(Cipher.ENCRYPT_MODE, publicKey, new SecureRandom());
    String javaWrapped = keyId + ":" + Base64.getEncoder().encodeToString(wrap.doFinal(javaDek));
    Files.write(dir.resolve("java-dek.bin"), javaDek);
    Files.writeString(dir.resolve("java-wrapped.txt"), javaWrapped, StandardCharsets.UTF_8);

    // 3. Decrypt Rust's chunks with the JCE; 4. encrypt the same plaintexts for Rust.
    SecretKeySpec aesKey = new SecretKeySpec(dek, "AES");
    int n = 0;
    try (Stream<Path> files = Files.list(dir)) {
      for (Path plainFile : files.filter(p -> p.getFileName().toString().startsWith("plain-")).toList()) {
        String suffix = plainFile.getFileName().toString().substring("plain-".length());
        byte[] plain = Files.readAllBytes(plainFile);
        byte[] stored = Files.readAllBytes(dir.resolve("rust-chunk-" + suffix));
        check(stored.length == plain.length + 28, "stored size of rust-chunk-" + suffix);
        Cipher dec = Cipher.getInstance(AES);
        dec.init(Cipher.DECRYPT_MODE, aesKey, new GCMParameterSpec(128, stored, 0, 12));
        dec.updateAAD(aad);
        byte[] got = dec.doFinal(stored, 12, stored.length - 12);
        check(Arrays.equals(got, plain), "JCE decryption of rust-chunk-" + suffix);

        Cipher enc = Cipher.getInstance(AES);
        enc.init(Cipher.ENCRYPT_MODE, aesKey, new SecureRandom());
        enc.updateAAD(aad);
        byte[] iv = enc.getIV();
        check(iv.length == 12, "JCE GCM IV length");
        byte[] body = enc.doFinal(plain);
        byte[] out = new byte[iv.length + body.length];
        System.arraycopy(iv, 0, out, 0, iv.length);
        System.arraycopy(body, 0, out, iv.length, body.length);
        Files.write(dir.resolve("java-chunk-" + suffix), out);
        n++;
      }
    }
    check(n > 0, "at least one plain-N.bin vector");
    System.out.println("java interop: ok (" + n + " chunks, DEK wrapped both ways)");
  }

  private static byte[] pem(Path file) throws Exception {
    String text = Files.readString(file, StandardCharsets.US_ASCII);
    String body = text.replaceAll("-----(BEGIN|END) [A-Z ]+-----", "").replaceAll("\\s", "");
    return Base64.getDecoder().decode(body);
  }

  private static void check(boolean ok, String what) {
    if (!ok) {
      throw new AssertionError("java interop: MISMATCH: " + what);
    }
  }
}
