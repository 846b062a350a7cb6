package dev.idem.spring.jpa;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.SequenceGenerator;
import jakarta.persistence.Table;
import jakarta.persistence.Version;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.dao.OptimisticLockingFailureException;
import org.springframework.data.jpa.repository.JpaRepository;
import org.springframework.data.jpa.repository.config.EnableJpaRepositories;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * The everyday Spring Boot service: Spring MVC, Spring Data JPA on Hibernate, and Idem's starter
 * with nothing but {@code idem.principal} set (no {@code idem.mode}, no bean written for Idem).
 */
@SpringBootApplication
@EnableJpaRepositories(considerNestedRepositories = true)
public class JpaApp {

  /** An account: IDENTITY id (the INSERT runs at {@code save}), a unique e-mail, a version. */
  @Entity
  @Table(name = "accounts")
  public static class Account {
    @Id
    @GeneratedValue(strategy = GenerationType.IDENTITY)
    Long id;

    @Column(nullable = false, unique = true, length = 200)
    String email;

    @Column(nullable = false)
    int credits;

    @Version
    long version;

    protected Account() {}

    Account(String email) {
      this.email = email;
    }
  }

  /** A ticket: SEQUENCE id, so a plain {@code save} defers its INSERT to the flush at the commit. */
  @Entity
  @Table(name = "tickets")
  public static class Ticket {
    @Id
    @GeneratedValue(strategy = GenerationType.SEQUENCE, generator = "tickets_seq")
    @SequenceGenerator(name = "tickets_seq", sequenceName = "tickets_seq", allocationSize = 1)
    Long id;

    @Column(nullable = false, unique = true, length = 200)
    String code;

    protected Ticket() {}

    Ticket(String code) {
      this.code = code;
    }
  }

  /** A row written by a REQUIRES_NEW transaction, which does not join the request's. */
  @Entity
  @Table(name = "audit_entries")
  public static class AuditEntry {
    @Id
    @GeneratedValue(strategy = GenerationType.IDENTITY)
    Long id;

    @Column(nullable = false, length = 200)
    String what;

    protected AuditEntry() {}

    AuditEntry(String what) {
      this.what = what;
    }
  }

  public interface Accounts extends JpaRepository<Account, Long> {
    long countByEmail(String email);
  }

  public interface Tickets extends JpaRepository<Ticket, Long> {
    long countByCode(String code);
  }

  public interface AuditEntries extends JpaRepository<AuditEntry, Long> {
    long countByWhat(String what);
  }

  /** A {@code @Transactional} service method the handler calls; it joins the request's transaction. */
  @Service
  public static class Registrations {
    private final Accounts accounts;
    private final AuditEntries audit;

    Registrations(Accounts accounts, AuditEntries audit) {
      this.accounts = accounts;
      this.audit = audit;
    }

    @Transactional
    public Account register(String email) {
      return accounts.saveAndFlush(new Account(email));
    }

    @Transactional(propagation = Propagation.REQUIRES_NEW)
    public void audit(String what) {
      audit.save(new AuditEntry(what));
    }
  }

  @RestController
  public static class Api {
    final Accounts accounts;
    final Tickets tickets;
    final Registrations registrations;
    /** Makes the next {@code /accounts/then-fail} request fail after its write. */
    final AtomicBoolean failNext = new AtomicBoolean();
    final AtomicInteger runs = new AtomicInteger();

    Api(Accounts accounts, Tickets tickets, Registrations registrations) {
      this.accounts = accounts;
      this.tickets = tickets;
      this.registrations = registrations;
    }

    /** Payment API calls, and whether a transaction was open during each. */
    final AtomicInteger payments = new AtomicInteger();
    final java.util.List<Boolean> paymentsInTransaction = new java.util.concurrent.CopyOnWriteArrayList<>();

    /** Stands for a call to a payment API: its route runs in lease mode (idem.routes.payments), outside any transaction. */
    @PostMapping("/payments")
    ResponseEntity<String> pay(@RequestBody String amount) throws InterruptedException {
      int call = payments.incrementAndGet();
      paymentsInTransaction.add(org.springframework.transaction.support.TransactionSynchronizationManager.isActualTransactionActive());
      Thread.sleep(30);
      return ResponseEntity.status(201).body("charge ch_" + call + " of " + amount);
    }

    /** {@code saveAndFlush}; a taken e-mail is a 409, as the application answers without Idem. */
    @PostMapping("/accounts")
    ResponseEntity<String> register(@RequestBody String email) {
      runs.incrementAndGet();
      try {
        Account account = accounts.saveAndFlush(new Account(email));
        return ResponseEntity.status(201).body("account " + account.id);
      } catch (DataIntegrityViolationException e) {
        return ResponseEntity.status(409).body("email already registered");
      }
    }

    /** The same through a {@code @Transactional} service method. */
    @PostMapping("/accounts/service")
    ResponseEntity<String> registerThroughService(@RequestBody String email) {
      runs.incrementAndGet();
      try {
        return ResponseEntity.status(201).body("account " + registrations.register(email).id);
      } catch (DataIntegrityViolationException e) {
        return ResponseEntity.status(409).body("email already registered");
      }
    }

    /** Wrong on purpose: answers success although the write failed and marked the transaction rollback-only. */
    @PostMapping("/accounts/lying")
    ResponseEntity<String> registerAndClaimSuccess(@RequestBody String email) {
      runs.incrementAndGet();
      try {
        accounts.saveAndFlush(new Account(email));
      } catch (DataIntegrityViolationException e) {
        // swallowed
      }
      return ResponseEntity.status(201).body("created");
    }

    /** Saves, then fails when told to: the write must not outlive the failed request. */
    @PostMapping("/accounts/then-fail")
    ResponseEntity<String> registerThenFail(@RequestBody String email) {
      runs.incrementAndGet();
      Account account = accounts.save(new Account(email));
      if (failNext.getAndSet(false)) {
        throw new IllegalStateException("failed after saving account " + account.id);
      }
      return ResponseEntity.status(201).body("account " + account.id);
    }

    /** A plain {@code save} of a SEQUENCE entity: the INSERT runs at the flush, after this returned. */
    @PostMapping("/tickets")
    ResponseEntity<String> ticket(@RequestBody String code) {
      runs.incrementAndGet();
      tickets.save(new Ticket(code));
      return ResponseEntity.status(201).body("ticket " + code);
    }

    /** Adds credits at the version the client read: a stale version is a 409. */
    @PostMapping("/accounts/{id}/credits")
    ResponseEntity<String> credit(@PathVariable("id") long id, @RequestParam("version") long version, @RequestBody String credits) {
      runs.incrementAndGet();
      Account current = accounts.findById(id).orElseThrow();
      Account update = new Account(current.email);
      update.id = id;
      update.version = version;
      update.credits = current.credits + Integer.parseInt(credits.trim());
      try {
        Account saved = accounts.saveAndFlush(update);
        return ResponseEntity.ok("credits " + saved.credits + " version " + saved.version);
      } catch (OptimisticLockingFailureException e) {
        return ResponseEntity.status(409).body("stale version " + version);
      }
    }

    /** Holds {@code /slow} requests until the test opens it. */
    volatile java.util.concurrent.CountDownLatch slowGate = new java.util.concurrent.CountDownLatch(0);
    final java.util.concurrent.CountDownLatch[] slowEntered = {new java.util.concurrent.CountDownLatch(1)};

    /** Inserts a ticket, then waits for the test's gate: the first attempt of a slow request. */
    @PostMapping("/slow")
    ResponseEntity<String> slow(@RequestBody String code) throws InterruptedException {
      runs.incrementAndGet();
      tickets.saveAndFlush(new Ticket(code));
      slowEntered[0].countDown();
      if (!slowGate.await(60, java.util.concurrent.TimeUnit.SECONDS)) {
        throw new IllegalStateException("the test never opened the gate");
      }
      return ResponseEntity.status(201).body("ticket " + code);
    }

    /** Writes an audit entry in a REQUIRES_NEW transaction, then fails. */
    @PostMapping("/audited-failure")
    ResponseEntity<String> auditedFailure(@RequestBody String what) {
      runs.incrementAndGet();
      registrations.audit(what);
      throw new IllegalStateException("failed after the audit entry");
    }
  }
}
