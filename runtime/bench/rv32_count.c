/*
 * Counts the instructions rv32_bench executes per kernel call, from QEMU's
 * log (`-d in_asm,exec,nochain`) on stdin, and prints one line per case:
 *
 *     rv32 <kernel> <case> <instructions per work unit>          (1 core)
 *     rv32 <kernel> <case>@8 <slowest core x 8 / work> <per-core counts>
 *
 * in_asm lists each translation block when QEMU translates it (first
 * instruction's address, one line per instruction); exec logs each block
 * executed (its address; nochain makes QEMU log every execution). A block
 * ends at every branch, so an executed block ran all of its instructions.
 * The count of a call is the instructions of the blocks executed after the
 * block of dg_rv32_begin and before that of dg_rv32_end, less the markers'
 * own cost (the "calibrate" case). The case lines come from rv32_bench's
 * stdout (a file, read once the log ends).
 *
 *     rv32_count CASES_FILE < qemu_log
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TB_SLOTS (1u << 16)
#define MAX_CALLS 4096

static unsigned tb_pc[TB_SLOTS];
static unsigned tb_len[TB_SLOTS];
static unsigned char tb_used[TB_SLOTS];

static unsigned long long calls[MAX_CALLS];
static unsigned ncalls;

static unsigned *tb_slot(unsigned pc)
{
    unsigned h = (pc >> 2) * 2654435761u & (TB_SLOTS - 1), tries;
    for (tries = 0; tries < TB_SLOTS; tries++, h = (h + 1) & (TB_SLOTS - 1)) {
        if (!tb_used[h]) {
            tb_used[h] = 1;
            tb_pc[h] = pc;
            tb_len[h] = 0;
            return &tb_len[h];
        }
        if (tb_pc[h] == pc)
            return &tb_len[h];
    }
    fprintf(stderr, "rv32_count: more than %u translation blocks\n", TB_SLOTS);
    exit(2);
}

static int ends_with(const char *line, const char *word)
{
    size_t n = strlen(line), w = strlen(word);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == ' '))
        n--;
    return n > w && line[n - w - 1] == ' ' && memcmp(line + n - w, word, w) == 0;
}

/* Reads the log; fills calls[]. */
static void read_log(FILE *in)
{
    static char line[4096];
    unsigned *cur = NULL; /* length of the block being listed */
    unsigned long long count = 0;
    int counting = 0;
    while (fgets(line, sizeof line, in)) {
        if (strncmp(line, "IN:", 3) == 0) {
            cur = NULL;
            if (!fgets(line, sizeof line, in))
                break;
            cur = tb_slot((unsigned)strtoul(line, NULL, 16));
            *cur = 1;
        } else if (cur && strncmp(line, "0x", 2) == 0) {
            (*cur)++;
        } else if (strncmp(line, "Trace ", 6) == 0) {
            const char *p = strchr(line, '[');
            unsigned pc;
            cur = NULL;
            if (!p || !(p = strchr(p, '/')))
                continue;
            pc = (unsigned)strtoul(p + 1, NULL, 16);
            if (ends_with(line, "dg_rv32_end")) {
                if (!counting || ncalls == MAX_CALLS) {
                    fprintf(stderr, "rv32_count: unpaired end marker or too many calls\n");
                    exit(2);
                }
                calls[ncalls++] = count;
                counting = 0;
            } else if (counting) {
                count += *tb_slot(pc);
            } else if (ends_with(line, "dg_rv32_begin")) {
                counting = 1;
                count = 0;
            }
        } else {
            cur = NULL;
        }
    }
}

/* Pairs the case lines with the counts and prints the table. */
static int report(FILE *cases)
{
    char kernel[128], name[128], word[16];
    unsigned work, cores, used = 0, c;
    unsigned long long base = 0;
    int done = 0;
    while (fscanf(cases, "%15s", word) == 1) {
        if (strcmp(word, "done") == 0) {
            done = 1;
            break;
        }
        if (strcmp(word, "case") != 0 ||
            fscanf(cases, "%127s %127s %u %u", kernel, name, &work, &cores) != 4 ||
            used + cores > ncalls || work == 0) {
            fprintf(stderr, "rv32_count: case lines and log do not match\n");
            return 2;
        }
        if (strcmp(kernel, "calibrate") == 0) {
            base = calls[used++];
            continue;
        }
        if (cores == 1) {
            printf("rv32 %s %s %.3f\n", kernel, name, (double)(calls[used] - base) / work);
        } else {
            unsigned long long worst = 0;
            for (c = 0; c < cores; c++)
                if (calls[used + c] - base > worst)
                    worst = calls[used + c] - base;
            printf("rv32 %s %s@%u %.3f", kernel, name, cores, (double)worst * cores / work);
            for (c = 0; c < cores; c++)
                printf(" %llu", calls[used + c] - base);
            printf("\n");
        }
        used += cores;
    }
    if (!done || used != ncalls) {
        fprintf(stderr, "rv32_count: the run did not finish (%u of %u calls matched)\n", used,
                ncalls);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    FILE *cases;
    if (argc != 2) {
        fprintf(stderr, "usage: rv32_count CASES_FILE < qemu_log\n");
        return 2;
    }
    read_log(stdin);
    cases = fopen(argv[1], "r");
    if (!cases) {
        fprintf(stderr, "rv32_count: cannot open %s\n", argv[1]);
        return 2;
    }
    return report(cases);
}
