#include "run_records.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.hpp"
#include "json_io.hpp"

namespace evgate {
namespace {

void read_session(const rapidjson::Value& record, const std::string& source, RunRecords& run) {
    SessionInfo session;
    session.rootdir = optional_string(record, "rootdir", source).value_or("");
    session.configfile = optional_string(record, "configfile", source);
    session.conftests = string_array(record, "conftests", source);
    session.unlisted = string_array(record, "unlisted", source);
    session.absent = string_array(record, "absent", source);
    if (const auto* collected = member(record, "collected"); collected && collected->IsInt64())
        session.collected = static_cast<long>(collected->GetInt64());
    run.sessions.push_back(std::move(session));
}

void read_result(const rapidjson::Value& record, const std::string& source, RunRecords& run) {
    TestResult result;
    result.outcome = string_member(record, "outcome", source);
    result.dirty = string_array(record, "dirty", source);
    result.message = optional_string(record, "message", source).value_or("");
    run.results[string_member(record, "test", source)] = std::move(result);
}

}  // namespace

RunRecords read_run_records(const std::filesystem::path& file) {
    RunRecords run;
    std::ifstream in(file, std::ios::binary);
    if (!in) return run;
    const std::string source = file.string();
    JsonlReader reader(in, source);
    rapidjson::Document record;
    while (reader.next(record)) {
        const std::string event = optional_string(record, "event", source).value_or("");
        const std::string where = source + ":" + std::to_string(reader.line());
        if (event == "session") {
            read_session(record, where, run);
        } else if (event == "start") {
            run.started.push_back(string_member(record, "test", where));
        } else if (event == "result") {
            read_result(record, where, run);
        } else if (event == "end") {
            ++run.processes_ended;
            if (const auto* status = member(record, "exitstatus"); status && status->IsInt())
                run.exit_statuses.push_back(status->GetInt());
        } else if (event == "interrupted") {
            run.interrupted[string_member(record, "test", where)] = optional_string(record, "reason", where).value_or("");
        } else if (event == "torn") {
            ++run.torn;
        } else if (event == "finished") {
            const auto* complete = member(record, "complete");
            run.finished = complete != nullptr && complete->IsBool() && complete->GetBool();
            run.finish_note = optional_string(record, "note", where).value_or("");
            run.receipt = optional_string(record, "receipt", where).value_or("");
        } else {
            throw InputError(source, reader.line(), "unknown record event " + quote(event));
        }
    }
    if (reader.torn()) throw InputError(source, reader.line(), "torn record (no newline at the end)");
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
