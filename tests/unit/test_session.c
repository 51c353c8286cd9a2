/* A bench session's contract (sluice/bench/session.h): one record per selected
 * variant and adapter written into <output_dir>/<profile>/, a step reported
 * before each run with its place in the total, a note for each variant that
 * cannot run, and each record handed back with where it went or why it
 * could not be written. The variants are NLP-1's, built small by the test's
 * own instantiate hook, which refuses CV-1 to stand for a variant that
 * cannot be built. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <criterion/criterion.h>

#include "sluice/bench/session.h"
#include "support.h"

enum { MAX_SEEN = 16 };

/* What the callbacks saw, in order. */
typedef struct seen {
    int nsteps, nnotes, nrecords;
    sl_session_step steps[MAX_SEEN];
    sl_session_note_kind note_kinds[MAX_SEEN];
    bool note_errors[MAX_SEEN];
    char note_messages[MAX_SEEN][SL_ERR_MAX];
    char record_names[MAX_SEEN][128];
    sl_record_outcome outcomes[MAX_SEEN];
    bool written[MAX_SEEN];
    char write_errors[MAX_SEEN][SL_ERR_MAX];
} seen;

static void on_step(void *user, const sl_session_step *step)
{
    seen *s = user;
    cr_assert_lt(s->nsteps, MAX_SEEN);
    s->steps[s->nsteps++] = *step;
}

static void on_note(void *user, const sl_session_note *note)
{
    seen *s = user;
    cr_assert_lt(s->nnotes, MAX_SEEN);
    s->note_kinds[s->nnotes] = note->kind;
    s->note_errors[s->nnotes] = note->is_error;
    snprintf(s->note_messages[s->nnotes], SL_ERR_MAX, "%s/%s: %s", note->scenario->id, note->variant->name,
             note->message);
    s->nnotes++;
}

static void on_record(void *user, const sl_record *record, const sl_environment *env, const char *path,
                      const sl_err *write_err)
{
    seen *s = user;
    cr_assert_not_null(env, "a record comes with the environment it was written with");
    cr_assert_lt(s->nrecords, MAX_SEEN);
    cr_assert_eq(path == NULL, write_err != NULL, "a record is either written or comes with why not");
    snprintf(s->record_names[s->nrecords], 128, "%s/%s %s", record->scenario, record->variant, record->adapter);
    s->outcomes[s->nrecords] = record->outcome;
    s->written[s->nrecords] = path != NULL;
    snprintf(s->write_errors[s->nrecords], SL_ERR_MAX, "%s", write_err ? write_err->msg : "");
    s->nrecords++;
}

static int built, freed;

static sl_status small_instantiate(const sl_scenario *scenario, const sl_variant *variant,
                                   const sl_build_options *options, sl_scenario_instance **out, sl_err *err)
{
    if (strcmp(scenario->id, "CV-1") == 0)
        return sl_fail(err, SL_EIO, "the test refuses to build %s", scenario->id);
    sl_build_options small = *options;
    small.n_override = 256;
    sl_status status = sl_scenario_instantiate(scenario, variant, &small, out, err);
    built += status == SL_OK;
    return status;
}

static void counted_free(sl_scenario_instance *instance)
{
    freed++;
    sl_scenario_instance_free(instance);
}

static bool never_here(char *reason, size_t size)
{
    snprintf(reason, size, "not on this machine");
    return false;
}

/* The reference adapter, and a fake one that is never available. */
static sl_adapter absent;
static const sl_adapter *adapters[2];

/* NLP-1/128 at 256 rows, NLP-1/2048 with no size at this profile, and
 * CV-1/32x32, which small_instantiate refuses. */
static sl_session_variant variants[3];

static void session_options(const char *dir, seen *s, sl_session_options *options)
{
    const sl_scenario *nlp1 = sl_scenario_find("NLP-1"), *cv1 = sl_scenario_find("CV-1");
    variants[0] =
        (sl_session_variant){.scenario = nlp1, .variant = sl_scenario_variant(nlp1, "128"), .n = 256, .batch_size = 32};
    variants[1] =
        (sl_session_variant){.scenario = nlp1, .variant = sl_scenario_variant(nlp1, "2048"), .n = 0, .batch_size = 32};
    variants[2] =
        (sl_session_variant){.scenario = cv1, .variant = sl_scenario_variant(cv1, "32x32"), .n = 512, .batch_size = 64};
    absent = *sl_adapter_find("reference");
    absent.name = "absent";
    absent.available = never_here;
    adapters[0] = sl_adapter_find("reference");
    adapters[1] = &absent;
    built = freed = 0;

    sl_session_options_init(options, SL_PROFILE_CI, 42);
    options->bench.repetitions = 2;
    options->bench.warmup_batches = 1;
    options->bench.measured_batches = 3;
    options->bench.skip_probes = true;
    options->output_dir = dir;
    options->variants = variants;
    options->nvariants = 3;
    options->adapters = adapters;
    options->nadapters = 2;
    options->instantiate = small_instantiate;
    options->instance_free = counted_free;
    options->callbacks =
        (sl_session_callbacks){.user = s, .on_step = on_step, .on_note = on_note, .on_record = on_record};
}

/* A test's folder, what its callbacks saw, and its session's options. */
typedef struct fixture {
    char dir[256];
    seen seen;
    sl_session_options options;
} fixture;

static void fixture_setup(fixture *f)
{
    test_tmpdir_create(f->dir, sizeof f->dir, "session");
    memset(&f->seen, 0, sizeof f->seen);
    session_options(f->dir, &f->seen, &f->options);
}

static void run_session(const sl_session_options *options, sl_session **out)
{
    sl_err err = {0};
    cr_assert_eq(sl_session_create(options, out, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_session_run(*out, &err), SL_OK, "%s", err.msg);
}

static sl_record read_record(const sl_session *session, const char *name)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", sl_session_dir(session), name);
    sl_record record;
    sl_err err = {0};
    cr_assert_eq(sl_record_read(path, &record, NULL, &err), SL_OK, "%s", err.msg);
    return record;
}

Test(session, writes_one_record_per_run_and_reports_each_step)
{
    fixture f;
    fixture_setup(&f);
    const seen *s = &f.seen;
    sl_session *session;
    run_session(&f.options, &session);

    char expected_dir[300];
    snprintf(expected_dir, sizeof expected_dir, "%s/ci", f.dir);
    cr_expect_str_eq(sl_session_dir(session), expected_dir);
    /* Two variants run (NLP-1/2048 has no size), each on both adapters. */
    cr_expect_eq(sl_session_total(session), 4);
    cr_assert_eq(s->nsteps, 4);
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(s->steps[i].index, i + 1);
        cr_expect_eq(s->steps[i].total, 4);
        cr_expect_eq(s->steps[i].adapter, adapters[i % 2]);
    }
    cr_expect_str_eq(s->steps[0].scenario->id, "NLP-1");
    cr_expect_str_eq(s->steps[2].scenario->id, "CV-1");

    cr_assert_eq(s->nnotes, 2);
    cr_expect_eq(s->note_kinds[0], SL_SESSION_NOT_AT_SIZE);
    cr_expect_not(s->note_errors[0], "a variant without a size is no error");
    cr_expect_eq(s->note_kinds[1], SL_SESSION_NOT_BUILT);
    cr_expect(s->note_errors[1]);
    cr_expect(strstr(s->note_messages[1], "the test refuses to build CV-1") != NULL, "%s", s->note_messages[1]);

    cr_assert_eq(s->nrecords, 4);
    static const sl_record_outcome outcomes[] = {SL_RECORD_OK, SL_RECORD_UNAVAILABLE, SL_RECORD_FAILED,
                                                 SL_RECORD_FAILED};
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(s->outcomes[i], outcomes[i], "%s: %s", s->record_names[i], sl_record_outcome_name(s->outcomes[i]));
        cr_expect(s->written[i], "%s: %s", s->record_names[i], s->write_errors[i]);
    }
    cr_expect_eq(built, 1);
    cr_expect_eq(freed, 1, "every instance built is freed");

    /* The files say what the callbacks were handed. */
    sl_record ok = read_record(session, "NLP-1__128__reference.json");
    cr_expect_eq(ok.outcome, SL_RECORD_OK);
    cr_expect_str_eq(ok.equivalence, "bitwise", "a session holds every adapter to the reference");
    cr_expect_eq(ok.repetitions, 2);
    cr_expect_eq(ok.measured_batches, 3);
    cr_expect_eq(ok.elements, 3 * 32);
    sl_record_release(&ok);
    sl_record unbuilt = read_record(session, "CV-1__32x32__reference.json");
    cr_expect_eq(unbuilt.outcome, SL_RECORD_FAILED);
    cr_expect_str_eq(unbuilt.reason, "the test refuses to build CV-1");
    cr_expect_eq(unbuilt.batch_size, 64, "the variant's batch size, as the caller resolved it");
    cr_expect_str_eq(unbuilt.profile, "ci");
    sl_record_release(&unbuilt);
    sl_record unavailable = read_record(session, "NLP-1__128__absent.json");
    cr_expect_str_eq(unavailable.reason, "not on this machine");
    sl_record_release(&unavailable);

    sl_session_free(session);
    test_tmpdir_remove(f.dir);
}

Test(session, a_record_that_cannot_be_written_is_reported_with_why)
{
    fixture f;
    fixture_setup(&f);
    const seen *s = &f.seen;
    f.options.nvariants = 1;
    /* A folder where the reference's record would go. */
    char blocked[512];
    snprintf(blocked, sizeof blocked, "%s/ci", f.dir);
    cr_assert_eq(mkdir(blocked, 0700), 0);
    snprintf(blocked, sizeof blocked, "%s/ci/NLP-1__128__reference.json", f.dir);
    cr_assert_eq(mkdir(blocked, 0700), 0);
    sl_session *session;
    run_session(&f.options, &session);

    cr_assert_eq(s->nrecords, 2);
    cr_expect_not(s->written[0]);
    cr_expect(strstr(s->write_errors[0], "NLP-1__128__reference.json") != NULL, "%s", s->write_errors[0]);
    cr_expect_eq(s->outcomes[0], SL_RECORD_OK, "the run itself was fine");
    cr_expect(s->written[1], "%s", s->write_errors[1]);
    sl_session_free(session);
    test_tmpdir_remove(f.dir);
}

Test(session, a_job_of_several_ranks_leaves_out_what_is_not_distributed)
{
    fixture f;
    fixture_setup(&f);
    const seen *s = &f.seen;
    sl_comm *world;
    sl_err err = {0};
    cr_assert_eq(sl_comm_local(0, 2, &world, &err), SL_OK, "%s", err.msg);
    f.options.world = world;
    sl_session *session;
    run_session(&f.options, &session);

    cr_expect_eq(sl_session_total(session), 0);
    cr_expect_eq(s->nsteps, 0);
    cr_expect_eq(s->nrecords, 0);
    cr_expect_eq(built, 0, "nothing that is left out is built");
    /* NLP-1/2048 has no size whatever the job; the other two are left out. */
    cr_assert_eq(s->nnotes, 3);
    cr_expect_eq(s->note_kinds[0], SL_SESSION_NOT_IN_JOB);
    cr_expect_eq(s->note_kinds[1], SL_SESSION_NOT_AT_SIZE);
    cr_expect_eq(s->note_kinds[2], SL_SESSION_NOT_IN_JOB);
    sl_session_free(session);
    sl_comm_free(world);
    test_tmpdir_remove(f.dir);
}

Test(session, refuses_options_it_cannot_run)
{
    fixture f;
    fixture_setup(&f);
    sl_session *session = NULL;
    sl_err err = {0};

    f.options.instantiate = NULL;
    cr_expect_eq(sl_session_create(&f.options, &session, &err), SL_EINVAL);
    cr_expect_null(session);
    f.options.instantiate = small_instantiate;

    /* An output folder below a file cannot be created. */
    char file[512];
    snprintf(file, sizeof file, "%s/file", f.dir);
    test_write_text(file, "not a folder");
    f.options.output_dir = file;
    cr_expect_neq(sl_session_create(&f.options, &session, &err), SL_OK);
    cr_expect_null(session);
    cr_expect(strstr(err.msg, "cannot create the output directory") != NULL, "%s", err.msg);
    test_tmpdir_remove(f.dir);
}

/* Rounds: the adapters of a variant take turns, one repetition each per
 * round, so the order of their runs is A B A B A B; each record holds every
 * round and says it was interleaved. */
static char run_log[64];
static int run_log_length;

static sl_status logged_run(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                            sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err)
{
    if (run_log_length < (int)sizeof run_log - 1)
        run_log[run_log_length++] = adapter->name[0];
    return sl_adapter_find("reference")->run(adapter, pipeline, request, sink, user, latency_ns, err);
}

static int variants_done;
static void on_variant(void *user, const sl_scenario *scenario, const sl_variant *variant)
{
    (void)user;
    cr_expect_str_eq(scenario->id, "NLP-1");
    cr_expect_str_eq(variant->name, "128");
    variants_done++;
}

Test(session, rounds_interleave_the_adapters_of_a_variant)
{
    fixture f;
    fixture_setup(&f);
    static sl_adapter first, second;
    first = *sl_adapter_find("reference");
    first.name = "A-first";
    first.run = logged_run;
    second = first;
    second.name = "B-second";
    const sl_adapter *pair[2] = {&first, &second};
    f.options.adapters = pair;
    f.options.nvariants = 1;
    f.options.rounds = 3;
    f.options.callbacks.on_variant = on_variant;
    run_log_length = 0;
    variants_done = 0;
    sl_session *session;
    run_session(&f.options, &session);
    run_log[run_log_length] = '\0';
    cr_expect_str_eq(run_log, "ABABAB");
    cr_expect_eq(variants_done, 1, "the variant's results are announced once, when it completes");
    for (int i = 0; i < 2; i++) {
        char name[64];
        snprintf(name, sizeof name, "NLP-1__128__%s.json", pair[i]->name);
        sl_environment env;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", sl_session_dir(session), name);
        sl_record record;
        sl_err err = {0};
        cr_assert_eq(sl_record_read(path, &record, &env, &err), SL_OK, "%s", err.msg);
        cr_expect_eq(record.outcome, SL_RECORD_OK);
        cr_expect_eq(record.rounds, 3);
        cr_expect_eq(record.repetitions, 3, "one repetition per round, whatever bench.repetitions says");
        cr_expect_gt(record.wall_ns, 0);
        /* Linux has /proc/loadavg; the load is a number, not unknown. */
        cr_expect_geq(env.load_start, 0.0);
        cr_expect_geq(env.load_end, 0.0);
        sl_record_release(&record);
    }
    sl_session_free(session);
    test_tmpdir_remove(f.dir);
}
