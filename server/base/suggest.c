/* SPDX-License-Identifier: ISC */
/* The nearest known name to an unknown one (see suggest.h). */
#include "suggest.h"

#include <stddef.h>
#include <string.h>

/* Lowercase ASCII without separators into out; -1 when longer than SUGGEST_NAME_MAX. */
static int normalise(const char *s, char *out)
{
	int n = 0;
	for (; *s; s++) {
		char c = *s;
		if (c == '_' || c == '-' || c == '.' || c == ' ')
			continue;
		if (n == SUGGEST_NAME_MAX)
			return -1;
		out[n++] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
	}
	out[n] = '\0';
	return n;
}

static int min3(int a, int b, int c)
{
	int m = a < b ? a : b;
	return m < c ? m : c;
}

/* Optimal string alignment distance of a[0..la) and b[0..lb), three rows of a table. */
static int osa(const char *a, int la, const char *b, int lb)
{
	int rows[3][SUGGEST_NAME_MAX + 1];
	int *prev2 = rows[0], *prev = rows[1], *cur = rows[2];

	for (int j = 0; j <= lb; j++)
		prev[j] = j;
	for (int i = 1; i <= la; i++) {
		cur[0] = i;
		for (int j = 1; j <= lb; j++) {
			int cost = a[i - 1] != b[j - 1];
			cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    prev2[j - 2] + 1 < cur[j])
				cur[j] = prev2[j - 2] + 1;
		}
		int *t = prev2;
		prev2 = prev;
		prev = cur;
		cur = t;
	}
	return prev[lb];
}

int suggest_distance(const char *a, const char *b)
{
	char na[SUGGEST_NAME_MAX + 1], nb[SUGGEST_NAME_MAX + 1];
	int la = normalise(a, na), lb = normalise(b, nb);
	if (la < 0 || lb < 0)
		return -1;
	return osa(na, la, nb, lb);
}

void suggest_init(struct suggest *s, const char *word)
{
	s->word = word;
	s->best = NULL;
	s->best_d = -1;
}

void suggest_try(struct suggest *s, const char *candidate)
{
	char na[SUGGEST_NAME_MAX + 1], nb[SUGGEST_NAME_MAX + 1];
	int la = normalise(s->word, na), lb = normalise(candidate, nb);
	if (la <= 0 || lb <= 0 || strcmp(s->word, candidate) == 0)
		return;
	int longer = la > lb ? la : lb;
	/* Cheap bound first: the distance is at least the difference in length. */
	if ((la > lb ? la - lb : lb - la) * 3 > longer)
		return;
	int d = osa(na, la, nb, lb);
	if (d * 3 > longer || (s->best && d >= s->best_d))
		return;
	s->best = candidate;
	s->best_d = d;
}

const char *suggest_best(const struct suggest *s)
{
	return s->best;
}

const char *suggest_from(const char *word, const char *const *names)
{
	struct suggest s;
	suggest_init(&s, word);
	for (; *names; names++)
		suggest_try(&s, *names);
	return suggest_best(&s);
}
