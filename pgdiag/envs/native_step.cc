// Native MuJoCo stepping as an XLA FFI handler: the compiled program calls MuJoCo's C API directly, with no
// Python, no GIL and no host-callback machinery between a batched step and the physics (pgdiag/envs/native_ffi.py
// builds this file against the installed MuJoCo's headers and jaxlib's FFI headers, and registers it).
//
// A stepper owns a copy of the model, one mjData per thread and a persistent pool of threads (a one-thread
// stepper steps on the calling thread, and several callers at once, each with data of its own). Each environment
// is stepped exactly as the Python paths step it (pgdiag/envs/native_physics.py), so results are bitwise the same:
//   mode 0 ("state"): the full physics state set to zero but for qpos and qvel (mj_setState), the control set, a
//     zero solver warm start, mj_step × n_frames — what MuJoCo's rollout computes from such a state; fields asked
//     for are those of the new state: its kinematics recomputed (mj_kinematics, mj_comPos, mj_comVel, the part of
//     mj_forward the Brax tasks' derived fields need), so n_frames = 0 gives a reset state's fields;
//   mode 1 ("fields"): qpos, qvel, the solver warm start and the control set, mj_step × n_frames and
//     mj_rnePostConstraint, as Gym steps its tasks; the requested fields read back after the step.
// Inputs are float32 arrays with any leading (batch) dimensions; the output packs, per environment, qpos, qvel
// and the fields (in the order asked) as float32. An environment whose control is NaN is idle (the Env contract,
// pgdiag/envs/base.py): it is not stepped, costs nothing, and comes back as it went in, its fields zero.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <mujoco/mujoco.h>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// Fields a task may read back (Gym's: pgdiag/envs/gym_tasks.py; kinematics: mujoco_tasks.py); codes shared
// with native_ffi.py's FIELDS.
enum Field { kWarmstart = 0, kMassCenter = 1, kCinert = 2, kCvel = 3, kQfrcActuator = 4, kCfrcExt = 5,
             kSubtreeCom = 6 };

int FieldSize(const mjModel* m, int field) {
  switch (field) {
    case kWarmstart: return m->nv;
    case kMassCenter: return 3;
    case kCinert: return 10 * m->nbody;
    case kCvel: return 6 * m->nbody;
    case kQfrcActuator: return m->nv;
    case kCfrcExt: return 6 * m->nbody;
    case kSubtreeCom: return 3 * m->nbody;
  }
  return -1;
}

// A fixed set of worker threads that run one job (a function of the share index) at a time; the calling
// thread takes share 0, so one thread means no pool at all. A batched step's physics lasts a few hundred
// microseconds and the program's own kernels between two steps a few dozen, about what waking a sleeping thread
// takes: so each side spins a short while before it sleeps (a worker after its job, waiting for the next one;
// the caller after its share, waiting for the others), and only a pool left idle longer sleeps.
class Pool {
 public:
  explicit Pool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { Work(i); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs job(0) ... job(shares - 1), shares <= size(), and returns when all are done.
  void Run(int shares, const std::function<void(int)>& job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &job;
      shares_ = shares;
      pending_.store(shares - 1, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    if (shares > 1) wake_.notify_all();
    job(0);
    if (Spin([this] { return pending_.load(std::memory_order_acquire) == 0; })) return;
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return pending_.load(std::memory_order_acquire) == 0; });
  }

 private:
  // Whether ready() became true within about kSpin of polling (false: the caller goes to sleep). Each poll
  // yields the core: where other threads wait for it (more threads than cores: test workers, several devices,
  // other processes) they run instead of the poll, which a bare busy loop slowed by half.
  template <typename Ready>
  static bool Spin(Ready ready) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (;;) {
      if (ready()) return true;
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::yield();
    }
  }

  void Work(int index) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int)>* job;
      int shares;
      if (!Spin([&] { return generation_.load(std::memory_order_acquire) != seen; })) {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_ || generation_.load(std::memory_order_acquire) != seen; });
        if (stop_) return;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);  // job_ and shares_ are written under the lock, with generation_
        if (stop_) return;
        seen = generation_.load(std::memory_order_acquire);
        job = job_;
        shares = shares_;
      }
      if (index >= shares) continue;
      (*job)(index);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mu_);  // a caller past its spin waits under the lock: wake it
        done_.notify_one();
      }
    }
  }

  static constexpr std::chrono::microseconds kSpin{200};
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* job_ = nullptr;
  int shares_ = 0;
  std::atomic<int> pending_{0};
  std::atomic<uint64_t> generation_{0};
  bool stop_ = false;
};

// What one thread steps an environment with: its own MuJoCo data and full-physics state vector (mode 0).
struct Unit {
  mjData* d;
  std::vector<mjtNum> state;
};

struct Stepper {
  mjModel* model;
  int n_frames, mode;
  std::vector<int> fields;
  std::vector<Unit> units;  // one per pool thread
  Pool pool;
  std::mutex busy;  // one pooled batched step at a time per stepper (two programs may share it)
  // A one-thread stepper steps each call's batch on the calling thread, so calls from several XLA devices (a
  // collection sharded over the host's CPU devices) run at once, each with a unit of its own from here.
  std::mutex spare_mu;
  std::vector<Unit> spares;
  int out_size;

  Stepper(const mjModel* m, int n_frames, int threads, int mode, const int* f, int nf)
      : model(mj_copyModel(nullptr, m)), n_frames(n_frames), mode(mode), fields(f, f + nf), pool(threads) {
    for (int i = 0; i < threads; ++i) units.push_back(NewUnit());
    out_size = model->nq + model->nv;
    for (int field : fields) out_size += FieldSize(model, field);
  }

  Unit NewUnit() const {
    return Unit{mj_makeData(model), std::vector<mjtNum>(mj_stateSize(model, mjSTATE_FULLPHYSICS), 0.0)};
  }

  Unit TakeSpare() {
    {
      std::lock_guard<std::mutex> lock(spare_mu);
      if (!spares.empty()) {
        Unit u = std::move(spares.back());
        spares.pop_back();
        return u;
      }
    }
    return NewUnit();
  }

  void GiveBack(Unit u) {
    std::lock_guard<std::mutex> lock(spare_mu);
    spares.push_back(std::move(u));
  }

  void StepOne(Unit& unit, const float* qpos, const float* qvel, const float* warm, const float* ctrl,
               float* out) {
    const mjModel* m = model;
    mjData* d = unit.d;
    if (m->nu > 0 && std::isnan(ctrl[0])) {  // idle: the caller keeps its state; nothing is stepped
      float* o = out;
      for (int j = 0; j < m->nq; ++j) *o++ = qpos[j];
      for (int j = 0; j < m->nv; ++j) *o++ = qvel[j];
      std::fill(o, out + out_size, 0.0f);
      return;
    }
    if (mode == 0) {
      std::vector<mjtNum>& state = unit.state;
      std::fill(state.begin(), state.end(), 0.0);  // layout: time, qpos, qvel, ...
      for (int j = 0; j < m->nq; ++j) state[1 + j] = qpos[j];
      for (int j = 0; j < m->nv; ++j) state[1 + m->nq + j] = qvel[j];
      mj_setState(m, d, state.data(), mjSTATE_FULLPHYSICS);
      for (int j = 0; j < m->nu; ++j) d->ctrl[j] = ctrl[j];
      for (int j = 0; j < m->nv; ++j) d->qacc_warmstart[j] = 0.0;
    } else {
      for (int j = 0; j < m->nq; ++j) d->qpos[j] = qpos[j];
      for (int j = 0; j < m->nv; ++j) d->qvel[j] = qvel[j];
      for (int j = 0; j < m->nv; ++j) d->qacc_warmstart[j] = warm[j];
      for (int j = 0; j < m->nu; ++j) d->ctrl[j] = ctrl[j];
    }
    for (int k = 0; k < n_frames; ++k) mj_step(m, d);
    if (mode == 1) {
      mj_rnePostConstraint(m, d);
    } else if (!fields.empty()) {  // the new state's kinematics (mj_step left those of the last substep's start)
      mj_kinematics(m, d);
      mj_comPos(m, d);
      mj_comVel(m, d);
    }
    float* o = out;
    for (int j = 0; j < m->nq; ++j) *o++ = static_cast<float>(d->qpos[j]);
    for (int j = 0; j < m->nv; ++j) *o++ = static_cast<float>(d->qvel[j]);
    for (int field : fields) {
      switch (field) {
        case kWarmstart:
          for (int j = 0; j < m->nv; ++j) *o++ = static_cast<float>(d->qacc_warmstart[j]);
          break;
        case kMassCenter: {  // Gym's mass_center: Σ m·xipos / Σ m over the bodies
          mjtNum total = 0, c[3] = {0, 0, 0};
          for (int b = 0; b < m->nbody; ++b) total += m->body_mass[b];
          for (int b = 0; b < m->nbody; ++b)
            for (int a = 0; a < 3; ++a) c[a] += (m->body_mass[b] / total) * d->xipos[3 * b + a];
          for (int a = 0; a < 3; ++a) *o++ = static_cast<float>(c[a]);
          break;
        }
        case kCinert:
          for (int j = 0; j < 10 * m->nbody; ++j) *o++ = static_cast<float>(d->cinert[j]);
          break;
        case kCvel:
          for (int j = 0; j < 6 * m->nbody; ++j) *o++ = static_cast<float>(d->cvel[j]);
          break;
        case kQfrcActuator:
          for (int j = 0; j < m->nv; ++j) *o++ = static_cast<float>(d->qfrc_actuator[j]);
          break;
        case kCfrcExt:
          for (int j = 0; j < 6 * m->nbody; ++j) *o++ = static_cast<float>(d->cfrc_ext[j]);
          break;
        case kSubtreeCom:
          for (int j = 0; j < 3 * m->nbody; ++j) *o++ = static_cast<float>(d->subtree_com[j]);
          break;
      }
    }
  }

  // Steps `batch` environments over the pool's threads, each taking the next chunk of environments as it
  // finishes one (environments with contacts cost several times those without, so fixed shares would leave
  // threads waiting on the slowest). Each environment is stepped alone on its thread's own data, so the result
  // does not depend on which thread takes it.
  void Step(int64_t batch, const float* qpos, const float* qvel, const float* warm, const float* ctrl, float* out) {
    if (batch <= 0) return;  // nothing to step (and no share of the pool to divide it by)
    const mjModel* m = model;
    auto one = [&](Unit& unit, int64_t i) {
      StepOne(unit, qpos + i * m->nq, qvel + i * m->nv, warm ? warm + i * m->nv : nullptr, ctrl + i * m->nu,
              out + i * out_size);
    };
    if (pool.size() == 1) {  // on the calling thread, concurrently with other callers
      Unit unit = TakeSpare();
      for (int64_t i = 0; i < batch; ++i) one(unit, i);
      GiveBack(std::move(unit));
      return;
    }
    std::lock_guard<std::mutex> lock(busy);
    const int shares = static_cast<int>(std::min<int64_t>(pool.size(), batch));
    const int64_t chunk = std::max<int64_t>(1, batch / (8 * shares));
    std::atomic<int64_t> next{0};
    auto job = [&](int share) {
      for (int64_t lo = next.fetch_add(chunk); lo < batch; lo = next.fetch_add(chunk))
        for (int64_t i = lo; i < std::min(lo + chunk, batch); ++i) one(units[share], i);
    };
    if (shares <= 1) {
      job(0);
    } else {
      pool.Run(shares, job);
    }
  }

  ~Stepper() {
    for (Unit& u : units) mj_deleteData(u.d);
    for (Unit& u : spares) mj_deleteData(u.d);
    mj_deleteModel(model);
  }
};

int64_t Rows(ffi::AnyBuffer::Dimensions dims, int64_t width, bool* ok) {
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < dims.size(); ++i) rows *= dims[i];
  *ok = dims.size() >= 1 && dims[dims.size() - 1] == width;
  return rows;
}

ffi::Error Check(int64_t batch, const char* name, ffi::Buffer<ffi::F32>& b, int width) {
  bool ok;
  const int64_t rows = Rows(b.dimensions(), width, &ok);
  if (!ok || rows != batch)
    return ffi::Error(ffi::ErrorCode::kInvalidArgument,
                      std::string("pgdiag native step: ") + name + " must have " + std::to_string(batch) +
                          " rows of " + std::to_string(width));
  return ffi::Error::Success();
}

ffi::Error StepImpl(int64_t handle, ffi::Buffer<ffi::F32> qpos, ffi::Buffer<ffi::F32> qvel,
                    ffi::Buffer<ffi::F32>* warm, ffi::Buffer<ffi::F32> ctrl, ffi::ResultBuffer<ffi::F32> out) {
  Stepper* s = reinterpret_cast<Stepper*>(handle);
  const mjModel* m = s->model;
  bool ok;
  const int64_t batch = Rows(qpos.dimensions(), m->nq, &ok);
  for (auto error : {Check(batch, "qpos", qpos, m->nq), Check(batch, "qvel", qvel, m->nv),
                     Check(batch, "ctrl", ctrl, m->nu)})
    if (error.failure()) return error;
  if (warm) {
    ffi::Error error = Check(batch, "qacc_warmstart", *warm, m->nv);
    if (error.failure()) return error;
  }
  ffi::Buffer<ffi::F32>& result = *out;
  if (Rows(result.dimensions(), s->out_size, &ok) != batch || !ok)
    return ffi::Error(ffi::ErrorCode::kInvalidArgument, "pgdiag native step: output shape mismatch");
  try {
    s->Step(batch, qpos.typed_data(), qvel.typed_data(), warm ? warm->typed_data() : nullptr, ctrl.typed_data(),
            result.typed_data());
  } catch (const std::exception& e) {  // mju_error as the Python bindings raise it
    return ffi::Error(ffi::ErrorCode::kInternal, std::string("MuJoCo: ") + e.what());
  }
  return ffi::Error::Success();
}

ffi::Error StepState(int64_t handle, ffi::Buffer<ffi::F32> qpos, ffi::Buffer<ffi::F32> qvel,
                     ffi::Buffer<ffi::F32> ctrl, ffi::ResultBuffer<ffi::F32> out) {
  return StepImpl(handle, qpos, qvel, nullptr, ctrl, out);
}

ffi::Error StepFields(int64_t handle, ffi::Buffer<ffi::F32> qpos, ffi::Buffer<ffi::F32> qvel,
                      ffi::Buffer<ffi::F32> warm, ffi::Buffer<ffi::F32> ctrl, ffi::ResultBuffer<ffi::F32> out) {
  return StepImpl(handle, qpos, qvel, &warm, ctrl, out);
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(PgdStepState, StepState,
                              ffi::Ffi::Bind()
                                  .Attr<int64_t>("handle")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(PgdStepFields, StepFields,
                              ffi::Ffi::Bind()
                                  .Attr<int64_t>("handle")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

extern "C" {

// A stepper for `model` (an mjModel*, copied), or null when a field code is unknown (or, in mode 0, not one of
// the kinematics that mode recomputes).
void* pgd_stepper_new(const void* model, int n_frames, int threads, int mode, const int* fields, int nfields) {
  const mjModel* m = static_cast<const mjModel*>(model);
  for (int i = 0; i < nfields; ++i) {
    if (FieldSize(m, fields[i]) < 0) return nullptr;
    const int f = fields[i];
    if (mode == 0 && f != kSubtreeCom && f != kCinert && f != kCvel) return nullptr;
  }
  return new Stepper(m, n_frames, std::max(1, threads), mode, fields, nfields);
}

int pgd_stepper_out_size(void* stepper) { return static_cast<Stepper*>(stepper)->out_size; }

void pgd_stepper_free(void* stepper) { delete static_cast<Stepper*>(stepper); }

// The same step outside XLA (tests, benchmarks): float32 arrays of `batch` rows; warm may be null in mode 0.
void pgd_stepper_step(void* stepper, int64_t batch, const float* qpos, const float* qvel, const float* warm,
                      const float* ctrl, float* out) {
  static_cast<Stepper*>(stepper)->Step(batch, qpos, qvel, warm, ctrl, out);
}
}
