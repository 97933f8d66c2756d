package io.tsm.bench.baseline;

import java.io.IOException;
import java.security.GeneralSecurityException;

import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdCompressCtx;
import com.github.luben.zstd.ZstdDecompressCtx;

/**
 * One chunk's transform (docs/object-format.md "Compression", "Encryption (envelope)"):
 * compress (zstd level 3, one frame recording its content size) then encrypt (AES-256-GCM,
 * fresh random 12-byte IV, 128-bit tag, the segment's AAD, stored
 * {@code IV || ciphertext || tag}); the read side reverses it. Not thread-safe: one instance
 * per copy or fetch stream.
 *
 * <p>Memory: reusable buffers of about {@code 2 x compressBound(chunk.size) + 28} bytes; the
 * JCE's GCM decryption additionally buffers one stored chunk.
 */
final class ChunkTransform implements AutoCloseable {
    /** Stored bytes added by encryption per chunk: IV (12) + tag (16). */
    static final int GCM_OVERHEAD = 12 + 16;
    private static final int TAG_BITS = 128;
    /** Bytes per {@code Cipher.update} call when encrypting a chunk. */
    static final int ENCRYPT_SLICE = 64 * 1024;

    private final ZstdCompressCtx zc;
    private final ZstdDecompressCtx zd;
    private final SecretKeySpec key;
    private final byte[] aad;
    private final Cipher cipher;
    private final BufferPool.Buffers buffers;
    private final byte[] mid;
    private final byte[] out;
    private final byte[] iv = new byte[12];
    private boolean closed;
    private boolean lastWasIdentity;

    /** {@code key}/{@code aad} null: no encryption. */
    ChunkTransform(boolean compress, SecretKeySpec key, byte[] aad, int chunkSize) throws IOException {
        this.key = key;
        this.aad = aad;
        buffers = BufferPool.SHARED.acquire(chunkSize);
        if (compress) {
            zc = new ZstdCompressCtx().setLevel(3).setContentSize(true);
            zd = new ZstdDecompressCtx();
        } else {
            zc = null;
            zd = null;
        }
        mid = compress && key != null ? buffers.mid() : null;
        out = compress || key != null ? buffers.out() : null;
        try {
            cipher = key == null ? null : Cipher.getInstance("AES/GCM/NoPadding");
        } catch (GeneralSecurityException e) {
            throw new IOException("AES/GCM/NoPadding is not available", e);
        }
    }

    /**
     * Transforms {@code src[0, len)}. Returns the stored length; the bytes are in
     * {@link #output()} (or {@code src} itself when there is no transform).
     */
    int transform(byte[] src, int len) throws IOException {
        byte[] data = src;
        int n = len;
        if (zc != null) {
            byte[] dst = cipher == null ? out : mid;
            n = zc.compressByteArray(dst, 0, dst.length, src, 0, len);
            data = dst;
        }
        if (cipher != null) {
            KeyRing.randomBytes(iv);
            try {
                cipher.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, iv));
                cipher.updateAAD(aad);
                System.arraycopy(iv, 0, out, 0, 12);
                // In ENCRYPT_SLICE pieces, not one doFinal per chunk (what Aiven's plugin does):
                // only then does JDK 17's JIT compile the AES-GCM intrinsics (see JceWarmup in
                // the harness); the bytes are the same.
                int o = 12;
                int p = 0;
                while (n - p > ENCRYPT_SLICE) {
                    o += cipher.update(data, p, ENCRYPT_SLICE, out, o);
                    p += ENCRYPT_SLICE;
                }
                n = o + cipher.doFinal(data, p, n - p, out, o);
            } catch (GeneralSecurityException e) {
                throw new IOException("AES-GCM encryption of a chunk failed", e);
            }
        }
        lastWasIdentity = zc == null && cipher == null;
        return n;
    }

    /** Where {@link #transform} left its output (null: the source itself). */
    byte[] output() {
        return lastWasIdentity ? null : out;
    }

    /**
     * Reverses the transform of {@code stored[0, len)} into {@code dst[0, originalLen)}.
     * {@code what} names the object and chunk in errors.
     */
    void detransform(byte[] stored, int len, byte[] dst, int originalLen, String what) throws IOException {
        byte[] data = stored;
        int n = len;
        byte[] plainTarget = zd == null ? dst : out;
        if (cipher != null) {
            if (len < GCM_OVERHEAD) {
                throw new IOException(what + ": stored chunk of " + len + " bytes is shorter than IV + tag");
            }
            try {
                cipher.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, stored, 0, 12));
                cipher.updateAAD(aad);
                int plainCap = plainTarget.length;
                if (len - GCM_OVERHEAD > plainCap) {
                    throw new IOException(what + ": stored chunk of " + len + " bytes is larger than any chunk");
                }
                n = cipher.doFinal(stored, 12, len - 12, plainTarget, 0);
            } catch (GeneralSecurityException e) {
                throw new IOException(what + ": AES-GCM authentication failed (wrong key, AAD or corrupt data)", e);
            }
            data = plainTarget;
        }
        if (zd != null) {
            long size = Zstd.getFrameContentSize(data, 0, n);
            if (size != originalLen) {
                throw new IOException(what + ": zstd frame content size " + size + " != expected " + originalLen);
            }
            int got;
            try {
                got = zd.decompressByteArray(dst, 0, originalLen, data, 0, n);
            } catch (RuntimeException e) {
                throw new IOException(what + ": zstd decompression failed", e);
            }
            if (got != originalLen) {
                throw new IOException(what + ": zstd frame gave " + got + " bytes, expected " + originalLen);
            }
        } else if (cipher == null) {
            if (n != originalLen) {
                throw new IOException(what + ": stored chunk is " + n + " bytes, expected " + originalLen);
            }
            System.arraycopy(stored, 0, dst, 0, n);
        } else if (n != originalLen) {
            throw new IOException(what + ": decrypted chunk is " + n + " bytes, expected " + originalLen);
        }
    }

    /** Encrypts one whole index (never compressed); a new array. */
    static byte[] encryptIndex(SecretKeySpec key, byte[] aad, byte[] plain) throws IOException {
        byte[] iv = new byte[12];
        KeyRing.randomBytes(iv);
        try {
            Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
            c.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, iv));
            c.updateAAD(aad);
            byte[] out = new byte[plain.length + GCM_OVERHEAD];
            System.arraycopy(iv, 0, out, 0, 12);
            c.doFinal(plain, 0, plain.length, out, 12);
            return out;
        } catch (GeneralSecurityException e) {
            throw new IOException("AES-GCM encryption of an index failed", e);
        }
    }

    /** Decrypts one whole index; {@code what} names it in errors. */
    static byte[] decryptIndex(SecretKeySpec key, byte[] aad, byte[] stored, String what) throws IOException {
        if (stored.length < GCM_OVERHEAD) {
            throw new IOException(what + ": stored index of " + stored.length + " bytes is shorter than IV + tag");
        }
        try {
            Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
            c.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, stored, 0, 12));
            c.updateAAD(aad);
            return c.doFinal(stored, 12, stored.length - 12);
        } catch (GeneralSecurityException e) {
            throw new IOException(what + ": AES-GCM authentication failed", e);
        }
    }

    /** This stream's pooled buffers (original and stored chunk buffers live there too). */
    BufferPool.Buffers buffers() {
        return buffers;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        BufferPool.SHARED.release(buffers);
        if (zc != null) {
            zc.close();
        }
        if (zd != null) {
            zd.close();
        }
    }
}
