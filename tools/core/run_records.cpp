#include "run_records.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.hpp"
#include "json_io.hpp"

namespace evgate {
namespace {

namespace key {  // the members a record may have, in record_fields() order
enum : std::size_t { event, test, outcome, message, dirty, changed, reason, rootdir, configfile, conftests, unlisted,
                     absent, collected, lease, exitstatus, complete, note, receipt };
}

FieldCapture record_fields() {
    return FieldCapture{"event",     "test",     "outcome",  "message", "dirty",      "changed",
                        "reason",    "rootdir",  "configfile", "conftests", "unlisted", "absent",
                        "collected", "lease",    "exitstatus", "complete", "note",     "receipt"};
}

RunRecord::Event event_of(const FieldCapture& f, const Where& where) {
    static const std::pair<std::string_view, RunRecord::Event> kEvents[] = {
        {"session", RunRecord::Event::session}, {"start", RunRecord::Event::start},
        {"result", RunRecord::Event::result},   {"end", RunRecord::Event::end},
        {"interrupted", RunRecord::Event::interrupted}, {"torn", RunRecord::Event::torn},
        {"finished", RunRecord::Event::finished}};
    const auto name = optional_text(f[key::event], "event", where).value_or("");
    for (const auto& [word, e] : kEvents)
        if (word == name) return e;
    throw InputError(where.source, where.line, "unknown record event " + quote(std::string(name)));
}

// The record the fields make, checked as its event needs.
RunRecord record_of(const FieldCapture& f, const std::string& source, int line) {
    const Where where{source, line};
    RunRecord r;
    r.line = line;
    r.event = event_of(f, where);
    switch (r.event) {
        case RunRecord::Event::session:
            r.rootdir = optional_text(f[key::rootdir], "rootdir", where).value_or("");
            r.configfile = optional_text(f[key::configfile], "configfile", where);
            r.conftests = &text_list(f[key::conftests], "conftests", where);
            r.unlisted = &text_list(f[key::unlisted], "unlisted", where);
            r.absent = &text_list(f[key::absent], "absent", where);
            if (f[key::collected].kind == JsonField::Kind::integer) r.collected = static_cast<long>(f[key::collected].integer);
            r.lease = optional_text(f[key::lease], "lease", where).value_or("");
            break;
        case RunRecord::Event::start:
            r.test = required_text(f[key::test], "test", where);
            break;
        case RunRecord::Event::result:
            r.outcome = required_text(f[key::outcome], "outcome", where);
            r.dirty = &text_list(f[key::dirty], "dirty", where);
            r.changed = &text_list(f[key::changed], "changed", where);
            r.message = optional_text(f[key::message], "message", where).value_or("");
            r.test = required_text(f[key::test], "test", where);
            break;
        case RunRecord::Event::end:
            if (f[key::exitstatus].is_int()) r.exitstatus = static_cast<int>(f[key::exitstatus].integer);
            break;
        case RunRecord::Event::interrupted:
            r.test = required_text(f[key::test], "test", where);
            r.reason = optional_text(f[key::reason], "reason", where).value_or("");
            break;
        case RunRecord::Event::torn:
            break;
        case RunRecord::Event::finished:
            r.complete = f[key::complete].kind == JsonField::Kind::boolean && f[key::complete].boolean;
            r.note = optional_text(f[key::note], "note", where).value_or("");
            r.receipt = optional_text(f[key::receipt], "receipt", where).value_or("");
            break;
    }
    return r;
}

std::vector<std::string> strings(const std::vector<std::string_view>* views) {
    return views ? std::vector<std::string>(views->begin(), views->end()) : std::vector<std::string>{};
}

}  // namespace

void add_record(RunRecords& run, const RunRecord& r) {
    switch (r.event) {
        case RunRecord::Event::session: {
            SessionInfo session;
            session.rootdir = r.rootdir;
            if (r.configfile) session.configfile = std::string(*r.configfile);
            session.conftests = strings(r.conftests);
            session.unlisted = strings(r.unlisted);
            session.absent = strings(r.absent);
            session.collected = r.collected;
            session.lease = r.lease;
            run.sessions.push_back(std::move(session));
            break;
        }
        case RunRecord::Event::start:
            run.started.emplace_back(r.test);
            break;
        case RunRecord::Event::result:
            run.results[std::string(r.test)] =
                TestResult{std::string(r.outcome), strings(r.dirty), std::string(r.message), strings(r.changed)};
            break;
        case RunRecord::Event::end:
            ++run.processes_ended;
            if (r.exitstatus) run.exit_statuses.push_back(*r.exitstatus);
            break;
        case RunRecord::Event::interrupted:
            run.interrupted[std::string(r.test)] = r.reason;
            break;
        case RunRecord::Event::torn:
            ++run.torn;
            break;
        case RunRecord::Event::finished:
            run.finished = r.complete;
            run.finish_note = r.note;
            run.receipt = r.receipt;
            break;
    }
}

void read_records(const std::filesystem::path& file, std::string& storage, const std::function<void(const RunRecord&)>& each) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return;  // no records yet
    const std::string source = file.string();
    read_file(file, storage);
    JsonlSaxReader reader(storage, source);
    auto fields = record_fields();
    while (reader.next(fields)) each(record_of(fields, source, reader.line()));
    if (reader.torn()) throw InputError(source, reader.line(), "torn record (no newline at the end)");
}

RunRecords read_run_records(const std::filesystem::path& file) {
    RunRecords run;
    std::string storage;
    read_records(file, storage, [&run](const RunRecord& r) { add_record(run, r); });
    return run;
}

void append_record(const std::filesystem::path& file, const std::string& json_object) {
    const std::string line = json_object + "\n";
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) throw Error("cannot append to " + file.string() + ": " + std::strerror(errno));
    auto written = ::write(fd, line.data(), line.size());  // one write: a record is whole or absent
    ::close(fd);
    if (written != static_cast<ssize_t>(line.size()))
        throw Error("cannot append to " + file.string() + ": short write");
}

std::uintmax_t cut_torn_tail(const std::filesystem::path& file) {
    int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st {};
    ::fstat(fd, &st);
    off_t end = st.st_size;
    off_t keep = end;
    char c = 0;
    while (keep > 0 && ::pread(fd, &c, 1, keep - 1) == 1 && c != '\n') --keep;
    if (keep != end && ::ftruncate(fd, keep) != 0) {
        ::close(fd);
        throw Error("cannot repair " + file.string() + ": " + std::strerror(errno));
    }
    ::close(fd);
    return static_cast<std::uintmax_t>(end - keep);
}

}  // namespace evgate
