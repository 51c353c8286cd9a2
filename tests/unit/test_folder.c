/* Folders written whole or not at all (sluice/core/folder.h): a staged folder
 * becomes the target only when committed, replaces the old one entirely, a
 * killed writer leaves the target as it was and its temporary is swept by
 * the next writer, readers refuse a folder whose manifest is missing,
 * short or contradicted, a user's folder is never replaced, and a folder's
 * lock keeps a second writer out. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support.h"

static char dir[64];

static void make_scratch(void)
{
    test_tmpdir_create(dir, sizeof dir, "folder");
}

static void remove_scratch(void)
{
    test_tmpdir_remove(dir);
}

TestSuite(folder, .init = make_scratch, .fini = remove_scratch);

static const sl_folder_origin origin = {"abc123", "test machine", "sluice test"};

static bool exists(const char *folder, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    return access(path, F_OK) == 0;
}

static int count_entries(const char *folder)
{
    DIR *d = opendir(folder);
    cr_assert_not_null(d, "cannot open %s", folder);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void put(const char *folder, const char *name, const char *text)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    test_write_text(path, text);
}

/* Writes a whole folder `name` of kind "test" holding the given files. */
static void write_folder(const char *target, const char *const *names, int count)
{
    sl_staged_folder staged;
    sl_err err = {0};
    cr_assert_eq(sl_folder_stage(target, "test", NULL, &staged, &err), SL_OK, "%s", err.msg);
    for (int i = 0; i < count; i++)
        put(staged.path, names[i], names[i]);
    cr_assert_eq(sl_folder_write_manifest(staged.path, "test", &origin, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_folder_commit(&staged, &err), SL_OK, "%s", err.msg);
}

static bool names_only_json(const char *name)
{
    size_t len = strlen(name);
    return len > 5 && strcmp(name + len - 5, ".json") == 0;
}

Test(folder, a_committed_folder_is_whole_and_checks)
{
    char target[128];
    snprintf(target, sizeof target, "%s/B", dir);
    static const char *const names[] = {"a.json", "b.json"};
    write_folder(target, names, 2);
    cr_expect(exists(target, "a.json") && exists(target, "b.json") && exists(target, SL_FOLDER_MANIFEST));
    cr_expect_eq(count_entries(target), 3);
    cr_expect_eq(count_entries(dir), 1, "no temporary is left beside it");
    sl_err err = {0};
    cr_expect_eq(sl_folder_check(target, "test", true, &err), SL_OK, "%s", err.msg);
    cr_expect_neq(sl_folder_check(target, "baseline", false, &err), SL_OK, "another kind is refused");
    cr_expect(strstr(err.msg, "'kind'"), "%s", err.msg);
    struct stat st;
    cr_assert_eq(stat(target, &st), 0);
    /* What mkdir(2) gives a new folder: 0777 less the umask (read here by
     * setting it back at once; this test starts no thread). */
    mode_t mask = umask(0);
    umask(mask);
    cr_expect_eq(st.st_mode & 0777, 0777 & ~mask, "mode %o", (unsigned)(st.st_mode & 0777));
}

/* D10: saving under an existing name used to add files and keep the old
 * ones, so a baseline of 1 record still held 35 of an earlier run. */
Test(folder, writing_a_name_again_replaces_the_whole_folder)
{
    char target[128];
    snprintf(target, sizeof target, "%s/B", dir);
    static const char *const first[] = {"a.json", "b.json", "c.json"};
    static const char *const second[] = {"d.json"};
    write_folder(target, first, 3);
    write_folder(target, second, 1);
    cr_expect(exists(target, "d.json"));
    cr_expect(!exists(target, "a.json") && !exists(target, "b.json") && !exists(target, "c.json"),
              "files of the first write survived the second");
    cr_expect_eq(count_entries(dir), 1, "the old folder's contents were not removed");
    sl_err err = {0};
    cr_expect_eq(sl_folder_check(target, "test", true, &err), SL_OK, "%s", err.msg);
}

/* A writer killed between staging and the rename (SIGKILL, which nothing
 * catches): the target keeps what it held, and the next writer in the same
 * parent folder sweeps the dead writer's temporary. */
Test(folder, a_killed_writer_leaves_the_old_folder_and_its_temporary_is_swept)
{
    char target[128];
    snprintf(target, sizeof target, "%s/B", dir);
    static const char *const first[] = {"a.json"};
    write_folder(target, first, 1);
    pid_t child = fork();
    cr_assert_neq(child, -1);
    if (child == 0) {
        sl_staged_folder staged;
        sl_err err = {0};
        if (sl_folder_stage(target, "test", NULL, &staged, &err) != SL_OK)
            _exit(3);
        put(staged.path, "partial.json", "half");
        raise(SIGKILL);
        _exit(4);
    }
    int status = 0;
    waitpid(child, &status, 0);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the child did not die of SIGKILL (%d)", status);
    cr_expect_eq(count_entries(dir), 2, "the dead writer's staged folder is there");
    sl_err err = {0};
    cr_expect_eq(sl_folder_check(target, "test", true, &err), SL_OK, "the old folder is whole: %s", err.msg);
    cr_expect(exists(target, "a.json") && !exists(target, "partial.json"));
    static const char *const second[] = {"b.json"};
    write_folder(target, second, 1);
    cr_expect_eq(count_entries(dir), 1, "the next writer swept the dead one's temporary");
}

Test(folder, a_folder_without_a_whole_manifest_is_refused_naming_what_is_wrong)
{
    char target[128];
    snprintf(target, sizeof target, "%s/B", dir);
    static const char *const names[] = {"a.json", "b.json"};
    write_folder(target, names, 2);
    sl_err err = {0};

    /* A file the manifest does not list (records dropped in by hand). */
    put(target, "extra.json", "x");
    cr_expect_neq(sl_folder_check(target, "test", false, &err), SL_OK);
    cr_expect(strstr(err.msg, "'extra.json'"), "%s", err.msg);
    char path[256];
    snprintf(path, sizeof path, "%s/extra.json", target);
    unlink(path);

    /* A listed file changed without changing its size. */
    put(target, "a.json", "A.json");
    cr_expect_eq(sl_folder_check(target, "test", false, &err), SL_OK, "sizes alone cannot see it: %s", err.msg);
    cr_expect_neq(sl_folder_check(target, "test", true, &err), SL_OK);
    cr_expect(strstr(err.msg, "'a.json'") && strstr(err.msg, "XXH3"), "%s", err.msg);
    cr_expect_neq(sl_folder_check_member(target, "test", "a.json", &err), SL_OK);
    cr_expect_eq(sl_folder_check_member(target, "test", "b.json", &err), SL_OK, "%s", err.msg);

    /* A listed file missing. */
    snprintf(path, sizeof path, "%s/b.json", target);
    unlink(path);
    cr_expect_neq(sl_folder_check(target, "test", false, &err), SL_OK);
    cr_expect(strstr(err.msg, "'b.json'") && strstr(err.msg, "missing"), "%s", err.msg);

    /* A manifest cut short: its last field, the count, is gone. */
    snprintf(path, sizeof path, "%s/%s", target, SL_FOLDER_MANIFEST);
    char *text = test_read_text(path);
    char *count = strstr(text, "\"count\"");
    cr_assert_not_null(count);
    strcpy(count, "\"x\": 0}");
    test_write_text(path, text);
    free(text);
    cr_expect_neq(sl_folder_check(target, "test", false, &err), SL_OK);
    cr_expect(strstr(err.msg, "'count'"), "%s", err.msg);

    /* No manifest at all. */
    unlink(path);
    cr_expect_neq(sl_folder_check(target, "test", false, &err), SL_OK);
    cr_expect(strstr(err.msg, SL_FOLDER_MANIFEST) && strstr(err.msg, target), "%s", err.msg);
}

/* A writer never replaces a folder that may hold a user's files, nor
 * writes through a symbolic link; a folder of only the kind's own files
 * (written before manifests existed) may be replaced. */
Test(folder, a_users_folder_or_a_link_is_never_replaced)
{
    char target[128], path[256];
    snprintf(target, sizeof target, "%s/user", dir);
    mkdir(target, 0755);
    put(target, "notes.txt", "mine");
    sl_staged_folder staged;
    sl_err err = {0};
    cr_expect_neq(sl_folder_stage(target, "test", names_only_json, &staged, &err), SL_OK);
    cr_expect(strstr(err.msg, "'notes.txt'"), "%s", err.msg);
    cr_expect(exists(target, "notes.txt"));
    cr_expect_eq(count_entries(dir), 1, "nothing was staged");

    snprintf(path, sizeof path, "%s/notes.txt", target);
    unlink(path);
    put(target, "old.json", "{}");
    cr_expect_eq(sl_folder_stage(target, "test", names_only_json, &staged, &err), SL_OK, "%s", err.msg);
    sl_folder_abandon(&staged);
    cr_expect(exists(target, "old.json"), "an abandoned write leaves the folder as it was");

    char link_path[128];
    snprintf(link_path, sizeof link_path, "%s/link", dir);
    cr_assert_eq(symlink(target, link_path), 0);
    cr_expect_neq(sl_folder_stage(link_path, "test", names_only_json, &staged, &err), SL_OK);
    cr_expect(strstr(err.msg, "symbolic link"), "%s", err.msg);
}

/* A writer that keeps most of a folder (a bless of one scenario) carries
 * the rest over; what it writes replaces the carried file, and the old
 * folder's copy is untouched until the commit. */
Test(folder, carried_files_stay_and_rewritten_ones_change)
{
    char target[128];
    snprintf(target, sizeof target, "%s/golden", dir);
    static const char *const names[] = {"a.json", "b.json"};
    write_folder(target, names, 2);
    sl_staged_folder staged;
    sl_err err = {0};
    cr_assert_eq(sl_folder_stage(target, "test", NULL, &staged, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_folder_carry(&staged, &err), SL_OK, "%s", err.msg);
    char path[4200];
    snprintf(path, sizeof path, "%s/b.json", staged.path);
    cr_assert_eq(sl_write_file_atomic(path, "new b", 5, &err), SL_OK, "%s", err.msg);
    snprintf(path, sizeof path, "%s/b.json", target);
    char *old = test_read_text(path);
    cr_expect_str_eq(old, "b.json", "the old folder changed before the commit");
    free(old);
    cr_assert_eq(sl_folder_write_manifest(staged.path, "test", &origin, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_folder_commit(&staged, &err), SL_OK, "%s", err.msg);
    char *now = test_read_text(path);
    cr_expect_str_eq(now, "new b");
    free(now);
    snprintf(path, sizeof path, "%s/a.json", target);
    char *carried = test_read_text(path);
    cr_expect_str_eq(carried, "a.json");
    free(carried);
    cr_expect_eq(sl_folder_check(target, "test", true, &err), SL_OK, "%s", err.msg);
}

/* N4: a second writer of a locked folder is refused, naming the holder;
 * once the holder is gone the folder can be locked again. */
Test(folder, a_locked_folder_refuses_a_second_writer)
{
    int ready[2], done[2];
    cr_assert_eq(pipe(ready), 0);
    cr_assert_eq(pipe(done), 0);
    pid_t child = fork();
    cr_assert_neq(child, -1);
    if (child == 0) {
        int fd;
        sl_err err = {0};
        char c = sl_folder_lock(dir, "test writer", &fd, &err) == SL_OK ? 'y' : 'n';
        (void)!write(ready[1], &c, 1);
        (void)!read(done[0], &c, 1);
        _exit(0);
    }
    char c = 0;
    cr_assert_eq(read(ready[0], &c, 1), 1);
    cr_assert_eq(c, 'y', "the child could not lock the folder");
    int fd = -1;
    sl_err err = {0};
    cr_expect_eq(sl_folder_lock(dir, "test writer", &fd, &err), SL_EBUSY);
    char pid[32];
    snprintf(pid, sizeof pid, "pid %ld", (long)child);
    cr_expect(strstr(err.msg, pid) && strstr(err.msg, dir), "%s", err.msg);
    (void)!write(done[1], "x", 1);
    waitpid(child, NULL, 0);
    cr_expect_eq(sl_folder_lock(dir, "test writer", &fd, &err), SL_OK, "%s", err.msg);
    sl_folder_unlock(fd);
}
