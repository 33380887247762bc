/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prometheus's text exposition format (0.0.4), written one way for every metrics file and
 * page of ours: a family's "# HELP" and "# TYPE" lines from its record, once, then its
 * samples, each label value escaped as the format requires (backslash, double quote and
 * line feed: one bad line makes Prometheus and node-exporter's textfile collector drop the
 * whole file, every series of it), each value printed with its family's decimals.
 */
#pragma once

#include <stddef.h>
#include <stdio.h>

enum prom_type { PROM_GAUGE, PROM_COUNTER };

/* A metric family: what its "# HELP" and "# TYPE" lines say, and how its values print. */
struct prom_family {
	const char *name; /* "nvidia_driver_installer_agent_ready" */
	enum prom_type type;
	const char *help;  /* one line, no line feed */
	unsigned decimals; /* digits after the point; 0 prints a value as an integer */
};

struct prom_label {
	const char *name;
	const char *value; /* escaped when written; NULL is "" */
};

/* FAM's "# HELP NAME HELP" and "# TYPE NAME TYPE" lines, to F. */
void prom_head(FILE *f, const struct prom_family *fam);

/*
 * One sample of FAM to F: its name, the N labels of LABELS in braces (none: no braces), and
 * VALUE with FAM's decimals (a float64, as the format's values are: a count is exact to
 * 2^53).
 */
void prom_sample(FILE *f, const struct prom_family *fam, const struct prom_label *labels, size_t n,
		 double value);

/* FAM's head and its one sample, without labels. */
void prom_single(FILE *f, const struct prom_family *fam, double value);

/* S as a label value, escaped, to F. */
void prom_escape(FILE *f, const char *s);
