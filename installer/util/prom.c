// SPDX-License-Identifier: Apache-2.0
/* Prometheus's text exposition format, written one way (util/prom.h). */
#include "util/prom.h"

static const char *const type_names[] = {[PROM_GAUGE] = "gauge", [PROM_COUNTER] = "counter"};

void prom_head(FILE *f, const struct prom_family *fam)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help, fam->name,
		type_names[fam->type]);
}

void prom_escape(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

void prom_sample(FILE *f, const struct prom_family *fam, const struct prom_label *labels, size_t n,
		 double value)
{
	fputs(fam->name, f);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%c%s=\"", i == 0 ? '{' : ',', labels[i].name);
		prom_escape(f, labels[i].value);
		fputc('"', f);
	}
	fprintf(f, "%s %.*f\n", n > 0 ? "}" : "", (int)fam->decimals, value);
}

void prom_single(FILE *f, const struct prom_family *fam, double value)
{
	prom_head(f, fam);
	prom_sample(f, fam, NULL, 0, value);
}
