/* tools/compare/table.c */
#include "compare/table.h"

#include <stdarg.h>
#include <string.h>

void tsl_table_init(tsl_table *t, const char *const *header) {
  memset(t, 0, sizeof *t);
  for (t->cols = 0; header[t->cols] && t->cols < TSL_TABLE_COLS; t->cols++)
    snprintf(t->cell[0][t->cols], TSL_TABLE_CELL, "%s", header[t->cols]);
}

int tsl_table_row(tsl_table *t) { return t->rows < TSL_TABLE_ROWS ? ++t->rows : t->rows; }

void tsl_table_set(tsl_table *t, int row, int col, const char *fmt, ...) {
  va_list ap;
  if (row < 1 || row > t->rows || col < 0 || col >= t->cols) return;
  va_start(ap, fmt);
  vsnprintf(t->cell[row][col], TSL_TABLE_CELL, fmt, ap);
  va_end(ap);
}

/* Display width of a UTF-8 string (continuation bytes take no column). */
static int width(const char *s) {
  int w = 0;
  for (; *s; s++) w += ((unsigned char)*s & 0xc0) != 0x80;
  return w;
}

void tsl_table_print_text(const tsl_table *t, FILE *out) {
  int w[TSL_TABLE_COLS] = {0};
  for (int r = 0; r <= t->rows; r++)
    for (int c = 0; c < t->cols; c++)
      if (width(t->cell[r][c]) > w[c]) w[c] = width(t->cell[r][c]);
  for (int r = 0; r <= t->rows; r++) {
    for (int c = 0; c < t->cols; c++)
      fprintf(out, "%s%s%*s", c ? "  " : "", t->cell[r][c], c < t->cols - 1 ? w[c] - width(t->cell[r][c]) : 0, "");
    fputc('\n', out);
    if (r == 0) {
      for (int c = 0; c < t->cols; c++) {
        fprintf(out, "%s", c ? "  " : "");
        for (int k = 0; k < w[c]; k++) fputc('-', out);
      }
      fputc('\n', out);
    }
  }
}

void tsl_table_print_markdown(const tsl_table *t, FILE *out) {
  for (int r = 0; r <= t->rows; r++) {
    fputc('|', out);
    for (int c = 0; c < t->cols; c++) fprintf(out, " %s |", t->cell[r][c]);
    fputc('\n', out);
    if (r == 0) {
      fputc('|', out);
      for (int c = 0; c < t->cols; c++) fputs("---|", out);
      fputc('\n', out);
    }
  }
}
