/* yaml_bare.c: the floor for `dagrun --check`: libyaml's bare event parse of
 * a file. It pulls every event, counts them and frees them, nothing else: no
 * tree, no strings kept, no IR. bench/check_bench.sh divides dagrun's times
 * by this one. It is not a YAML validator beyond what libyaml itself checks.
 *
 * Usage: yaml_bare FILE   prints "events N" and exits 0, or 1 on a parse
 * error (with libyaml's message and position on stderr). */
#include <stdio.h>
#include <stdlib.h>

#include <yaml.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s FILE\n", argv[0]);
    return 64;
  }
  FILE *f = fopen(argv[1], "rb");
  if (f == NULL) {
    perror(argv[1]);
    return 66;
  }
  /* A large stdio buffer, as a parser reading a big file would use. */
  static char buf[1 << 20];
  setvbuf(f, buf, _IOFBF, sizeof buf);

  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    fprintf(stderr, "yaml_parser_initialize failed\n");
    fclose(f);
    return 70;
  }
  yaml_parser_set_input_file(&parser, f);

  unsigned long long events = 0;
  int rc = 0;
  for (;;) {
    yaml_event_t event;
    if (!yaml_parser_parse(&parser, &event)) {
      fprintf(stderr, "%s:%zu:%zu: error: %s\n", argv[1], parser.problem_mark.line + 1,
              parser.problem_mark.column + 1, parser.problem ? parser.problem : "parse error");
      rc = 1;
      break;
    }
    int done = event.type == YAML_STREAM_END_EVENT;
    events++;
    yaml_event_delete(&event);
    if (done) break;
  }
  yaml_parser_delete(&parser);
  fclose(f);
  if (rc == 0) printf("events %llu\n", events);
  return rc;
}
