/* A file save's and a file read's system calls, each group made in one release of the
 * interpreter lock (django-a2a-agent's stores/file/syscalls.py says why and when these
 * are used: its CompanionSyscalls backend is these functions): a temp file
 * written and renamed, a file read, a journal line appended and the journal's path
 * checked, a directory's path checked and the directory synced.
 *
 * Every os.* call lets go of the lock for its system call; when the event loop (or
 * another store thread) takes it meanwhile, the calling thread then waits to get it
 * back, once per call. The functions here make the same calls, in the same order and
 * with the same flags, as its PythonSyscalls backend, and let go of the lock once for all
 * of them. Nothing is kept between calls (no descriptor, no state): a fork is safe.
 *
 * Built against the stable ABI (Python 3.11+): one build serves every later Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
#ifndef O_NOFOLLOW
#define O_NOFOLLOW 0
#endif

/* The OSError for errno ``err`` (FileNotFoundError, PermissionError... as os raises). */
static PyObject *
raise_errno(int err, PyObject *filename, PyObject *filename2)
{
    errno = err;
    return PyErr_SetFromErrnoWithFilenameObjects(PyExc_OSError, filename, filename2);
}

/* write_replace(temp, target, data, fsync) -> inode | None
 *
 * Create ``temp`` (O_EXCL, 0600), write ``data`` to it, fsync it (with ``fsync``), fstat
 * it, close it, rename it over ``target``: the new file's inode number. None when
 * ``temp`` exists already (nothing was done: the caller tries the next name). On any
 * other failure the temp file is removed and OSError raised. */
static PyObject *
write_replace(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *temp_name, *target_name, *temp = NULL, *target = NULL, *result = NULL;
    Py_buffer data;
    int do_fsync = 1, err = 0, taken = 0, renaming = 0;
    struct stat st;

    if (!PyArg_ParseTuple(args, "OOy*p:write_replace", &temp_name, &target_name, &data, &do_fsync))
        return NULL;
    if (!PyUnicode_FSConverter(temp_name, &temp) || !PyUnicode_FSConverter(target_name, &target)) {
        Py_XDECREF(temp);
        PyBuffer_Release(&data);
        return NULL;
    }
    const char *temp_path = PyBytes_AsString(temp), *target_path = PyBytes_AsString(target);
    const char *bytes = data.buf;
    size_t length = (size_t)data.len, written = 0;

    Py_BEGIN_ALLOW_THREADS
    int fd = open(temp_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        err = errno;
        taken = err == EEXIST;
    } else {
        while (written < length) {
            ssize_t n = write(fd, bytes + written, length - written);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                err = errno;
                break;
            }
            written += (size_t)n;
        }
        if (!err && do_fsync && fsync(fd) != 0)
            err = errno;
        if (!err && fstat(fd, &st) != 0)
            err = errno;
        if (close(fd) != 0 && !err)
            err = errno;
        if (!err) {
            renaming = 1;
            if (rename(temp_path, target_path) != 0)
                err = errno;
        }
        if (err)
            unlink(temp_path);
    }
    Py_END_ALLOW_THREADS

    if (taken)
        result = Py_NewRef(Py_None);
    else if (err)
        raise_errno(err, temp_name, renaming ? target_name : NULL);  /* as os.open's, os.replace's */
    else
        result = PyLong_FromUnsignedLongLong((unsigned long long)st.st_ino);
    PyBuffer_Release(&data);
    Py_XDECREF(temp);
    Py_XDECREF(target);
    return result;
}

/* read(path, size, to_end) -> bytes
 *
 * Open ``path``, read it ``size`` bytes at a time until a read returns less than asked
 * (the end, on Linux's regular files) or, with ``to_end``, until an empty one; close it. */
static PyObject *
read_file(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *name, *path = NULL, *result = NULL;
    Py_ssize_t size;
    int to_end = 0, err = 0, opened = 1;
    char *buffer = NULL;
    size_t length = 0, capacity = 0;

    if (!PyArg_ParseTuple(args, "Onp:read", &name, &size, &to_end) || !PyUnicode_FSConverter(name, &path))
        return NULL;
    if (size <= 0) {
        Py_DECREF(path);
        PyErr_SetString(PyExc_ValueError, "size must be positive");
        return NULL;
    }
    const char *file_path = PyBytes_AsString(path);

    Py_BEGIN_ALLOW_THREADS
    int fd = open(file_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        err = errno;
        opened = 0;
    } else {
        for (;;) {
            if (capacity - length < (size_t)size) {
                char *grown = realloc(buffer, capacity + (size_t)size);
                if (grown == NULL) {
                    err = ENOMEM;
                    break;
                }
                buffer = grown;
                capacity += (size_t)size;
            }
            ssize_t n = read(fd, buffer + length, (size_t)size);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                err = errno;
                break;
            }
            length += (size_t)n;
            if (n == 0 || (n < size && !to_end))
                break;
        }
        close(fd);
    }
    Py_END_ALLOW_THREADS

    if (err)
        raise_errno(err, opened ? NULL : name, NULL);  /* as os.read's errors: no file name */
    else
        result = PyBytes_FromStringAndSize(buffer ? buffer : "", (Py_ssize_t)length);
    free(buffer);
    Py_DECREF(path);
    return result;
}

/* append(fd, line, path) -> (device, inode, size) | None
 *
 * Write ``line`` to ``fd`` (a journal open with O_APPEND: one write, never interleaved),
 * then stat ``path``: what it names now (None when nothing), to tell whether the file
 * written to is still the one at ``path``. */
static PyObject *
append(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *name, *path = NULL;
    Py_buffer line;
    int fd, err = 0, missing = 0, statting = 0;
    struct stat st;

    if (!PyArg_ParseTuple(args, "iy*O:append", &fd, &line, &name))
        return NULL;
    if (!PyUnicode_FSConverter(name, &path)) {
        PyBuffer_Release(&line);
        return NULL;
    }
    const char *file_path = PyBytes_AsString(path);

    Py_BEGIN_ALLOW_THREADS
    ssize_t n;
    do {
        n = write(fd, line.buf, (size_t)line.len);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        err = errno;
    } else {
        statting = 1;
        if (stat(file_path, &st) != 0) {
            err = errno;
            missing = err == ENOENT;
        }
    }
    Py_END_ALLOW_THREADS

    PyObject *result = NULL;
    if (missing)
        result = Py_NewRef(Py_None);
    else if (err)
        raise_errno(err, statting ? name : NULL, NULL);  /* as os.write's (no name), os.stat's */
    else
        result = Py_BuildValue("(KKL)", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                               (long long)st.st_size);
    PyBuffer_Release(&line);
    Py_DECREF(path);
    return result;
}

/* fsync_if_same(path, fd, device, inode) -> bool
 *
 * Stat ``path``; when it is still (``device``, ``inode``), the file ``fd`` is open on,
 * fsync ``fd``: True. False when ``path`` names another file now (nothing synced). */
static PyObject *
fsync_if_same(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *name, *path = NULL;
    int fd, err = 0, same = 0, syncing = 0;
    unsigned long long device, inode;
    struct stat st;

    if (!PyArg_ParseTuple(args, "OiKK:fsync_if_same", &name, &fd, &device, &inode) ||
        !PyUnicode_FSConverter(name, &path))
        return NULL;
    const char *file_path = PyBytes_AsString(path);

    Py_BEGIN_ALLOW_THREADS
    if (stat(file_path, &st) != 0) {
        err = errno;
    } else if ((unsigned long long)st.st_dev == device && (unsigned long long)st.st_ino == inode) {
        same = syncing = 1;
        if (fsync(fd) != 0)
            err = errno;
    }
    Py_END_ALLOW_THREADS

    Py_DECREF(path);
    if (err)
        return raise_errno(err, syncing ? NULL : name, NULL);  /* as os.fsync's (no name), os.stat's */
    return PyBool_FromLong(same);
}

static PyMethodDef methods[] = {
    {"write_replace", write_replace, METH_VARARGS,
     "write_replace(temp, target, data, fsync) -> inode | None: a temp file written, synced and renamed."},
    {"read", read_file, METH_VARARGS, "read(path, size, to_end) -> bytes: a whole file."},
    {"append", append, METH_VARARGS, "append(fd, line, path) -> (device, inode, size) | None: a line, then a stat."},
    {"fsync_if_same", fsync_if_same, METH_VARARGS,
     "fsync_if_same(path, fd, device, inode) -> bool: a stat, then an fsync when path is still fd's file."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "a2a_fsio._syscalls", "A file save's system calls in one release of the GIL.", 0,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__syscalls(void)
{
    return PyModuleDef_Init(&module);
}
