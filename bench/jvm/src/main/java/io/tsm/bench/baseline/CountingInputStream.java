package io.tsm.bench.baseline;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.atomic.LongAdder;

/** Adds every byte read from the wrapped stream to a shared counter (bytes downloaded). */
final class CountingInputStream extends FilterInputStream {
    private final LongAdder counter;

    CountingInputStream(InputStream in, LongAdder counter) {
        super(in);
        this.counter = counter;
    }

    @Override
    public int read() throws IOException {
        int b = super.read();
        if (b >= 0) {
            counter.increment();
        }
        return b;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        int n = super.read(b, off, len);
        if (n > 0) {
            counter.add(n);
        }
        return n;
    }

    @Override
    public long skip(long n) throws IOException {
        long s = super.skip(n);
        if (s > 0) {
            counter.add(s);
        }
        return s;
    }
}
