package io.tsm.bench;

import java.security.GeneralSecurityException;
import java.security.SecureRandom;

import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * Warms up the JDK's AES-GCM before a measured case (not measured). Found on this machine
 * (JDK 17.0.15, AES-NI + VAES): with one {@code doFinal} per 4 MiB chunk the JIT never
 * compiles the AES-GCM intrinsic path (1 GiB stayed at ~70 MiB/s); when a chunk is encrypted
 * in 64 KiB {@code update} slices (as the baseline does) the path gets compiled after a few
 * hundred MiB and then runs at GB/s in both directions, 4 MiB decrypts included. A broker
 * runs for days, so the baseline is measured in that steady state: 4 MiB chunks are encrypted
 * (sliced) and decrypted until one round trip takes under 20 ms (>= 400 MiB/s) or 160 rounds
 * went by. Only for modes with encryption; for both plugins alike (tsm does not use the JCE).
 */
final class JceWarmup {
    private JceWarmup() {}

    /** Runs the warm-up; returns the rounds it took. */
    static int run() throws GeneralSecurityException {
        byte[] key = new byte[32];
        byte[] iv = new byte[12];
        SecureRandom random = new SecureRandom();
        random.nextBytes(key);
        SecretKeySpec k = new SecretKeySpec(key, "AES");
        Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
        int size = 4 * 1024 * 1024;
        int slice = 64 * 1024;
        byte[] in = new byte[size];
        byte[] out = new byte[size + 16];
        byte[] back = new byte[size];
        int fastInARow = 0;
        for (int round = 1; round <= 160; round++) {
            long t0 = System.nanoTime();
            random.nextBytes(iv);
            c.init(Cipher.ENCRYPT_MODE, k, new GCMParameterSpec(128, iv));
            c.updateAAD(key);
            int o = 0;
            int p = 0;
            while (size - p > slice) {
                o += c.update(in, p, slice, out, o);
                p += slice;
            }
            o += c.doFinal(in, p, size - p, out, o);
            c.init(Cipher.DECRYPT_MODE, k, new GCMParameterSpec(128, iv));
            c.updateAAD(key);
            c.doFinal(out, 0, o, back, 0);
            fastInARow = System.nanoTime() - t0 < 20_000_000L ? fastInARow + 1 : 0;
            if (fastInARow >= 3) {
                return round;
            }
        }
        return 160;
    }
}
