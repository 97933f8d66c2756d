package io.tsm.examples.strimzi;

import java.util.Collection;
import java.util.Locale;

/** The closest known name to a misspelt one (edit distance), for "did you mean" hints. */
final class DidYouMean {
    private DidYouMean() {}

    /**
     * The candidate closest to {@code word}, or null when none is close: at most 2 edits, or a
     * third of the word's length for long words, ignoring case.
     */
    static String closest(String word, Collection<String> candidates) {
        String w = word.toLowerCase(Locale.ROOT);
        int limit = Math.max(2, w.length() / 3);
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String c : candidates) {
            if (c.equals(word)) {
                continue;
            }
            int d = distance(w, c.toLowerCase(Locale.ROOT));
            if (d <= limit && d < bestDistance) {
                best = c;
                bestDistance = d;
            }
        }
        return best;
    }

    /** Levenshtein distance, with a swap of two adjacent characters counted as one edit. */
    static int distance(String a, String b) {
        int[][] d = new int[a.length() + 1][b.length() + 1];
        for (int i = 0; i <= a.length(); i++) {
            d[i][0] = i;
        }
        for (int j = 0; j <= b.length(); j++) {
            d[0][j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
                if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
                    d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
                }
            }
        }
        return d[a.length()][b.length()];
    }
}
