/* `nvhcq profile`: running a program with the profiler, and drawing a trace as an SVG timeline. */
#ifndef NVHCQ_PROFILE_SVG_H
#define NVHCQ_PROFILE_SVG_H

/* nvhcq profile [-o TRACE.json] [--svg OUT.svg] -- PROGRAM ARGS...
 * nvhcq profile --svg TRACE.json -o OUT.svg */
int cmd_profile(int argc, char **argv);
/* Draws the trace nvhcq wrote at json_path as a timeline at svg_path, one row per track, and
 * prints the time per kernel. 0 on success; else a message on stderr. */
int profile_render_svg(const char *json_path, const char *svg_path);

#endif
