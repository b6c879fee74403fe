/*
** tools/compare/table.h — a small table printed as aligned text or as
** Markdown, so the terminal and report.md show the same cells.
*/
#ifndef TSL_TABLE_H
#define TSL_TABLE_H

#include <stdio.h>

#define TSL_TABLE_COLS 12
#define TSL_TABLE_ROWS 64
#define TSL_TABLE_CELL 96

typedef struct tsl_table {
  int cols, rows; /* rows excludes the header */
  char cell[TSL_TABLE_ROWS + 1][TSL_TABLE_COLS][TSL_TABLE_CELL];
} tsl_table;

/* Start a table with its header cells (NULL-terminated). */
void tsl_table_init(tsl_table *t, const char *const *header);
/* Append a row; cells given printf-style one by one with tsl_table_set. */
int tsl_table_row(tsl_table *t);
void tsl_table_set(tsl_table *t, int row, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void tsl_table_print_text(const tsl_table *t, FILE *out);
void tsl_table_print_markdown(const tsl_table *t, FILE *out);

#endif
