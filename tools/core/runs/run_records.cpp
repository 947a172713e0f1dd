#include "runs/run_records.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <gsl/gsl>

#include "io/error.hpp"
#include "io/json_io.hpp"
#include "runs/protocol.hpp"

namespace evgate {
namespace {

namespace key {  // the members a record may have, in record_fields() order
enum : std::size_t { event,
                     test,
                     outcome,
                     message,
                     dirty,
                     changed,
                     reason,
                     rootdir,
                     configfile,
                     conftests,
                     unlisted,
                     absent,
                     collected,
                     lease,
                     exitstatus,
                     complete,
                     note,
                     receipt,
                     unblamed,
                     leftover,
                     phase,
                     final,
                     bytes,
                     digest,
                     finish,
                     fixture,
                     scope,
                     location,
                     isolation,
                     duration };
}

FieldCapture record_fields() {
    namespace f = protocol::field;
    return FieldCapture{f::event, f::test, f::outcome, f::message, f::dirty, f::changed,
                        f::reason, f::rootdir, f::configfile, f::conftests, f::unlisted, f::absent,
                        f::collected, f::lease, f::exitstatus, f::complete, f::note, f::receipt,
                        f::unblamed, f::leftover, f::phase, f::final, f::bytes, f::digest,
                        f::finish, f::fixture, f::scope, f::location, f::isolation, f::duration};
}

// Every event of the protocol file, as this side knows it (test_protocol.cpp checks both ways).
constexpr std::pair<std::string_view, RunRecord::Event> kEvents[] = {
    {protocol::event::session, RunRecord::Event::session}, {protocol::event::start, RunRecord::Event::start}, {protocol::event::result, RunRecord::Event::result}, {protocol::event::end, RunRecord::Event::end}, {protocol::event::interrupted, RunRecord::Event::interrupted}, {protocol::event::torn, RunRecord::Event::torn}, {protocol::event::finished, RunRecord::Event::finished}, {protocol::event::outside, RunRecord::Event::outside}, {protocol::event::foreign, RunRecord::Event::foreign}, {protocol::event::order, RunRecord::Event::order}, {protocol::event::status, RunRecord::Event::status}, {protocol::event::noise, RunRecord::Event::noise}};

RunRecord::Event event_of(const FieldCapture& f, const Where& where) {
    const auto name = optional_text(f[key::event], protocol::field::event, where).value_or("");
    if (const auto event = record_event(name)) return *event;
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
            r.outcome = read_outcome(required_text(f[key::outcome], "outcome", where), where.source, where.line);
            r.dirty = &text_list(f[key::dirty], "dirty", where);
            r.changed = &text_list(f[key::changed], "changed", where);
            r.message = optional_text(f[key::message], "message", where).value_or("");
            r.test = required_text(f[key::test], "test", where);
            r.unblamed = &text_list(f[key::unblamed], "unblamed", where);
            r.leftover = optional_text(f[key::leftover], "leftover", where).value_or("");
            if (const auto& d = f[key::duration]; (d.kind == JsonField::Kind::number || d.kind == JsonField::Kind::integer) && d.number >= 0)
                r.seconds = d.number;
            break;
        case RunRecord::Event::end:
            if (f[key::exitstatus].is_int()) r.exitstatus = static_cast<int>(f[key::exitstatus].integer);
            if (f[key::final].is_int()) r.final = static_cast<int>(f[key::final].integer);
            if (f[key::finish].is_int()) r.finish = static_cast<int>(f[key::finish].integer);
            break;
        case RunRecord::Event::outside:
            r.phase = required_text(f[key::phase], "phase", where);
            r.changed = &text_list(f[key::changed], "changed", where);
            r.fixture = optional_text(f[key::fixture], "fixture", where).value_or("");
            r.scope = optional_text(f[key::scope], "scope", where).value_or("");
            r.location = optional_text(f[key::location], "location", where).value_or("");
            r.test = optional_text(f[key::test], "test", where).value_or("");
            break;
        case RunRecord::Event::foreign:
        case RunRecord::Event::order:
        case RunRecord::Event::status:
            r.reason = required_text(f[key::reason], "reason", where);
            break;
        case RunRecord::Event::noise:
            r.reason = required_text(f[key::reason], "reason", where);
            r.test = optional_text(f[key::test], "test", where).value_or("");
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
            r.isolation = optional_text(f[key::isolation], "isolation", where).value_or("");
            break;
    }
    return r;
}

std::vector<std::string> strings(const std::vector<std::string_view>* views) {
    return views ? std::vector<std::string>(views->begin(), views->end()) : std::vector<std::string>{};
}

// "group 'a'", "groups 'a', 'b'"
std::string groups_named(const std::vector<std::string_view>* groups) {
    std::string out;
    for (const auto& g : groups ? *groups : std::vector<std::string_view>{}) out += (out.empty() ? "'" : ", '") + std::string(g) + "'";
    return (groups && groups->size() > 1 ? "groups " : "group ") + out;
}

// "at the teardown of session-scoped fixture 'server' (conftest.py:4), in tests/a.py::t": a
// fixture wider than a test, set up or torn down inside whichever test needed it first or last.
std::string fixture_phase(const RunRecord& r) {
    const auto when = r.phase.substr(r.phase.find(' ') + 1);  // "fixture setup" -> "setup"
    std::string text = "at the " + std::string(when) + " of " + (r.scope.empty() ? "" : std::string(r.scope) + "-scoped ") +
                       "fixture '" + std::string(r.fixture) + "'";
    if (!r.location.empty()) text += " (" + std::string(r.location) + ")";
    text += r.test.empty() ? std::string(", at session end") : ", in " + std::string(r.test) + " (not blamed on it)";
    return text;
}

std::string when(const RunRecord& r) {
    const auto phase = r.phase;
    if (!r.fixture.empty()) return fixture_phase(r);
    if (phase == "collection")
        return "at start-up or collection (a conftest, plugin or test module imported, a session-start or collection hook)";
    if (phase == "session end") return "at session end (a pytest_sessionfinish or pytest_unconfigure hook)";
    if (phase == "exit") return "after pytest's session ended (an atexit handler, or a thread or process still running)";
    if (phase == "unseen")
        return "by a write the change notifications missed and the run again with stat scans, in a fresh process, did not "
               "make (through a memory mapping taken before the run, say): no test is named";
    return "in phase '" + std::string(phase) + "'";
}

const char* check_of(RunRecord::Event event) {
    switch (event) {
        case RunRecord::Event::foreign: return "foreign";
        case RunRecord::Event::order: return "order";
        default: return "exit-status";
    }
}

// The record's `finished` seal against the bytes before it: what evgate wrote, untouched.
void check_seal(const FieldCapture& f, std::size_t before, const std::string& digest, const Where& where) {
    const auto* text = f[key::digest].kind == JsonField::Kind::string ? &f[key::digest].text : nullptr;
    if (f[key::bytes].kind != JsonField::Kind::integer || text == nullptr)
        throw InputError(where.source, where.line,
                         "the 'finished' record carries no length and digest of the records before it (not written by this evgate)");
    const auto bytes = f[key::bytes].integer;
    if (bytes != static_cast<std::int64_t>(before) || *text != digest)
        throw InputError(where.source, where.line,
                         "the records before the 'finished' record are not what evgate wrote (" + std::to_string(bytes) +
                             " bytes, digest " + std::string(*text) + "; the file holds " + std::to_string(before) +
                             " bytes, digest " + digest + "): the file was changed after evgate wrote it");
}

// Where the last line of `text` (whole, ending in '\n') starts.
std::size_t last_line_start(const std::string& text) {
    if (text.size() < 2) return 0;
    const auto previous = text.rfind('\n', text.size() - 2);
    return previous == std::string::npos ? 0 : previous + 1;
}

}  // namespace

std::optional<RunRecord::Event> record_event(std::string_view name) {
    for (const auto& [word, e] : kEvents)
        if (word == name) return e;
    return std::nullopt;
}

std::string_view record_event_name(RunRecord::Event event) {
    for (const auto& [word, e] : kEvents)
        if (e == event) return word;
    return {};
}

ChannelLine check_channel_line(std::string_view line) {
    thread_local std::string buffer;
    thread_local FieldCapture fields = record_fields();
    ChannelLine seen;
    buffer.assign(line);
    buffer += '\n';
    try {
        JsonlSaxReader reader(buffer, "the record channel");
        fields.restart();
        if (!reader.next(fields) || !fields.is_object()) return seen;
        const auto record = record_of(fields, "the record channel", 1);
        seen.record = true;
        seen.event = record.event;
        seen.test = record.test;
    } catch (const InputError&) {
        seen.record = false;
    }
    return seen;
}

std::string noise_record(std::string_view line, const std::string& running) {
    constexpr std::size_t kShown = 120;
    std::string shown;
    for (char c : line.substr(0, kShown)) shown += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key(protocol::field::event), w.String(protocol::event::noise);
    if (!running.empty()) w.Key(protocol::field::test), w.String(running);
    w.Key(protocol::field::reason), w.String(std::to_string(line.size()) + " bytes, '" + shown + (line.size() > kShown ? "...'" : "'"));
    w.EndObject();
    return std::string(json.text());
}

std::string records_digest(std::string_view bytes) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016" PRIx64, static_cast<std::uint64_t>(XXH3_64bits(bytes.data(), bytes.size())));
    return hex;
}

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
                TestResult{r.outcome, strings(r.dirty), std::string(r.message), strings(r.changed), r.seconds};
            if (r.unblamed && !r.unblamed->empty())
                run.doubts.push_back({"uncertain",
                                      groups_named(r.unblamed) + " changed during " + std::string(r.test) + " while " +
                                          std::string(r.leftover.empty() ? "something an earlier test left" : r.leftover) +
                                          " was running: not blamed on either",
                                      static_cast<int>(run.sessions.size())});
            break;
        case RunRecord::Event::end:
            ++run.processes_ended;
            if (r.exitstatus) run.exit_statuses.push_back(*r.exitstatus);
            if (r.final) run.final_statuses.push_back(*r.final);
            if (r.finish) run.finish_statuses.push_back(*r.finish);
            break;
        case RunRecord::Event::outside:
            if (r.changed) run.changed_outside.insert(run.changed_outside.end(), r.changed->begin(), r.changed->end());
            run.doubts.push_back({"outside", "fixture " + groups_named(r.changed) + " changed outside any test, " + when(r),
                                  static_cast<int>(run.sessions.size())});
            break;
        case RunRecord::Event::foreign:
        case RunRecord::Event::order:
        case RunRecord::Event::status:
            run.doubts.push_back({check_of(r.event), std::string(r.reason), static_cast<int>(run.sessions.size())});
            break;
        case RunRecord::Event::noise:
            run.doubts.push_back({"channel",
                                  (r.test.empty() ? std::string("between tests, ") : std::string(r.test) + " wrote, ") +
                                      "on the run's record channel, a line that is not a record: " + std::string(r.reason) +
                                      " (a test must not write to a descriptor it did not open)",
                                  static_cast<int>(run.sessions.size())});
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
            run.isolation = r.isolation;
            break;
    }
}

void parse_records(std::string& text, const std::string& source, const std::function<void(const RunRecord&)>& each) {
    // What a `finished` record must say of the bytes before it, taken before the parse changes them.
    const auto before = last_line_start(text);
    const auto digest = records_digest(std::string_view(text).substr(0, before));
    JsonlSaxReader reader(text, source);
    auto fields = record_fields();
    std::optional<FieldCapture> finished;  // checked once it is known to be the last record
    int finished_line = 0;
    while (reader.next(fields)) {
        if (finished) throw InputError(source, reader.line(), "a record after the 'finished' record: the file was appended to after evgate closed it");
        const auto record = record_of(fields, source, reader.line());
        if (record.event == RunRecord::Event::finished) {
            finished = fields;
            finished_line = reader.line();
        }
        each(record);
    }
    if (reader.torn()) throw InputError(source, reader.line(), "torn record (no newline at the end)");
    if (finished) check_seal(*finished, before, digest, Where{source, finished_line});
}

void read_records(const std::filesystem::path& file, std::string& storage, const std::function<void(const RunRecord&)>& each) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return;  // no records yet
    read_file(file, storage);
    parse_records(storage, file.string(), each);
}

RunRecords read_run_records(const std::filesystem::path& file) {
    RunRecords run;
    std::string storage;
    read_records(file, storage, [&run](const RunRecord& r) { add_record(run, r); });
    return run;
}

RunRecords parse_run_records(std::string text, const std::string& source) {
    RunRecords run;
    parse_records(text, source, [&run](const RunRecord& r) { add_record(run, r); });
    return run;
}

RecordsFile::RecordsFile(std::filesystem::path file) : file_(std::move(file)) {
    fd_ = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error("cannot write " + file_.string() + ": " + std::strerror(errno));
}

RecordsFile::~RecordsFile() { ::close(fd_); }

void RecordsFile::write(std::string_view bytes) {
    text_.append(bytes);
    while (!bytes.empty()) {  // whole lines in one write where the kernel takes them so: a kill -9 tears at most one
        const auto n = ::write(fd_, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw Error("cannot write " + file_.string() + ": " + std::strerror(errno));
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
}

void RecordsFile::append(std::string_view lines) { write(lines); }

void RecordsFile::append_record(std::string_view json_object) { write(std::string(json_object) + "\n"); }

void RecordsFile::finish(std::string json_object) {
    Expects(!json_object.empty() && json_object.back() == '}');
    json_object.pop_back();
    json_object += ",\"bytes\":" + std::to_string(text_.size()) + ",\"digest\":\"" + records_digest(text_) + "\"}";
    append_record(json_object);
}

void RecordsFile::clear() {
    if (::ftruncate(fd_, 0) != 0) throw Error("cannot empty " + file_.string() + ": " + std::strerror(errno));
    text_.clear();
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
