/* SPDX-License-Identifier: ISC */
/* "Did you mean ...?" for names that are refused as unknown (body fields, query
 * parameters, job spec fields, options): the known name nearest to the unknown one.
 *
 * Names are compared with case and the separators '_', '-', '.' and ' ' ignored, so
 * "blocksize", "block-size" and "BlockSize" are all block_size, then by the optimal
 * string alignment distance (Damerau-Levenshtein without repeated edits of a substring:
 * insertions, deletions, substitutions and swaps of two neighbours). A name is near when
 * that distance is at most a third of the longer name's length: one edit in a name of 3
 * to 5 letters, two in 6 to 8, and so on. Pure functions; no allocation. The worker
 * links this file as well. */
#ifndef SPINDLE_SUGGEST_H
#define SPINDLE_SUGGEST_H

/* Names longer than this (normalised) are never near anything. */
#define SUGGEST_NAME_MAX 64

struct suggest {
	const char *word; /* the unknown name; borrowed */
	const char *best; /* the nearest candidate so far; borrowed */
	int best_d;
};

void suggest_init(struct suggest *s, const char *word);
/* Offers one known name; the first of equally near ones is kept. */
void suggest_try(struct suggest *s, const char *candidate);
/* The nearest candidate offered that is near enough, or NULL. */
const char *suggest_best(const struct suggest *s);
/* The nearest of a NULL-terminated list, or NULL. */
const char *suggest_from(const char *word, const char *const *names);

/* The distance of a and b as suggest measures it (normalised); -1 when either is too
 * long. For the tests. */
int suggest_distance(const char *a, const char *b);

#endif
