/*
 * finetune.c: fine-tuning on real data through dg_model.h, as firmware
 * would run it (tests/it/finetune.rs builds it in place of a project's demo.c
 * for models/digits_finetune, see docs/training.md, "Fine-tuning on
 * real data").
 *
 * finetune_data.h (written by the test from the folder's finetune.npz)
 * holds the training split in its training order and the held-out split,
 * 8x8 digits as bytes 0..16. The program trains FT_STEPS passes, pass k on
 * mini-batch k mod (FT_TRAIN / FT_BATCH), the samples fed as value / 16,
 * then predicts each held-out sample alone (DG_MODEL_PREDICT_BATCH 1, eval
 * mode). It prints "loss K VALUE" for every pass, "predicted I CLASS" for
 * every held-out sample, then "correct C of N"; every failing call prints
 * "FAILED: ..." and exits 1.
 *
 * A first argument breaks the run on purpose, for the test's fault checks:
 * `shuffle` gives each training sample the label of the next one, `order`
 * feeds the mini-batches one further along (pass k reads mini-batch k + 1).
 */
#include "pmsis.h"

#include "dg_model.h"
#include "finetune_data.h"

#include <stdio.h>
#include <string.h>

#define FT_PIXELS 64u
#define FT_CLASSES (DG_MODEL_OUT_0_BYTES / sizeof(float))

PI_L2 static float samples[DG_MODEL_TRAIN_IN_0_BYTES / sizeof(float)];
PI_L2 static int64_t labels[DG_MODEL_TRAIN_IN_1_BYTES / sizeof(int64_t)];
PI_L2 static float sample[DG_MODEL_IN_0_BYTES / sizeof(float)];
PI_L2 static float scores[DG_MODEL_OUT_0_BYTES / sizeof(float)];
static struct pi_device cluster;
static int fault_order, fault_shuffle;

typedef char ft_batch_matches[(DG_MODEL_TRAIN_IN_0_BYTES == FT_BATCH * FT_PIXELS * sizeof(float) &&
                               DG_MODEL_TRAIN_IN_1_BYTES == FT_BATCH * sizeof(int64_t) &&
                               DG_MODEL_IN_0_BYTES == FT_PIXELS * sizeof(float) &&
                               DG_MODEL_PREDICT_BATCH == 1u && FT_CLASSES == 10u)
                                  ? 1
                                  : -1];

static int failed(const char *what, int status)
{
    printf("FAILED: %s (status %d)\r\n", what, status);
    return 1;
}

static int run(void)
{
    struct pi_cluster_conf conf;
    uint32_t step, i, j, correct = 0;
    int r;

    pi_cluster_conf_init(&conf);
#ifdef DG_PLATFORM_GAP9
    conf.cc_stack_size = CC_STACK_SIZE;
#endif
    pi_open_from_conf(&cluster, &conf);
    if (pi_cluster_open(&cluster) != 0)
        return failed("pi_cluster_open", DG_MODEL_ECLUSTER);
    if ((r = dg_model_init(&cluster)) != DG_MODEL_OK)
        return failed("dg_model_init", r);
    for (step = 0; step < FT_STEPS; step++) {
        uint32_t first = ((step + (fault_order ? 1u : 0u)) % (FT_TRAIN / FT_BATCH)) * FT_BATCH;
        for (i = 0; i < FT_BATCH; i++) {
            for (j = 0; j < FT_PIXELS; j++)
                samples[i * FT_PIXELS + j] = (float)ft_train_x[(first + i) * FT_PIXELS + j] / 16.0f;
            labels[i] = ft_train_y[(first + i + (fault_shuffle ? 1u : 0u)) % FT_TRAIN];
        }
        if ((r = dg_model_set_train_input(DG_MODEL_TRAIN_IN_0, samples, sizeof samples)) != DG_MODEL_OK)
            return failed("dg_model_set_train_input(data)", r);
        if ((r = dg_model_set_train_input(DG_MODEL_TRAIN_IN_1, labels, sizeof labels)) != DG_MODEL_OK)
            return failed("dg_model_set_train_input(labels)", r);
        if ((r = dg_model_train_step()) != DG_MODEL_OK)
            return failed("dg_model_train_step", r);
        printf("loss %u %.9g\r\n", (unsigned)(step + 1), (double)dg_model_loss());
    }
    for (i = 0; i < FT_TEST; i++) {
        uint32_t best = 0;
        for (j = 0; j < FT_PIXELS; j++)
            sample[j] = (float)ft_test_x[i * FT_PIXELS + j] / 16.0f;
        if ((r = dg_model_set_input(DG_MODEL_IN_0, sample, sizeof sample)) != DG_MODEL_OK)
            return failed("dg_model_set_input", r);
        if ((r = dg_model_predict()) != DG_MODEL_OK)
            return failed("dg_model_predict", r);
        if ((r = dg_model_get_output(DG_MODEL_OUT_0, scores, sizeof scores)) != DG_MODEL_OK)
            return failed("dg_model_get_output", r);
        for (j = 1; j < FT_CLASSES; j++)
            if (scores[j] > scores[best])
                best = j;
        printf("predicted %u %u\r\n", (unsigned)i, (unsigned)best);
        correct += (int64_t)best == ft_test_y[i];
    }
    printf("correct %u of %u\r\n", (unsigned)correct, (unsigned)FT_TEST);
    return 0;
}

static void entry(void)
{
    pmsis_exit(run());
}

int main(int argc, char **argv)
{
    fault_order = argc > 1 && strcmp(argv[1], "order") == 0;
    fault_shuffle = argc > 1 && strcmp(argv[1], "shuffle") == 0;
    return pmsis_kickoff((void *)entry);
}
