"""Role swaps in appositions, written by hand for ``build.py`` (see README.md).

Each row is (name, role, other role, event, second name), in the
language's own words, roles with their article. ``build.py`` writes the fact in one of
three forms (by position: apposition, copula then a pronoun sentence, a second person
who speaks) and two claims in apposition, ``NAME, ROLE, EVENT``:

- the fact's own role (label: supported);
- another role (label: unsupported): the fact gives the name one role, the claim another.
  In the third form the other role is the second person's, so the fact gives it to
  another name too; in the first two no name of the fact holds it.

The first 8 rows of each language are the dev split, the other 20 the held-out split.
"""

from __future__ import annotations

Row = tuple[str, str, str, str, str]

# (name, role, other role, event, second name)
EN: list[Row] = [
    ("Anna Weber", "the treasurer", "the secretary", "presented the annual budget", "Tom Hale"),
    ("Paul Grant", "the goalkeeper", "the striker", "missed the final training", "Leo Marsh"),
    ("Helen Price", "the director", "the producer", "left the film in May", "Sam Cole"),
    ("David Moore", "the chairman", "the founder", "signed the merger agreement", "Nina Ross"),
    ("Laura Quinn", "the pilot", "the navigator", "landed the plane in fog", "Mark Dunn"),
    ("Peter Hall", "the surgeon", "the nurse", "stayed at the clinic overnight", "Jane Ford"),
    ("Grace Lowe", "the coach", "the captain", "praised the young players", "Ian Shaw"),
    ("Oscar Reed", "the editor", "the photographer", "quit the magazine", "Ruth Lane"),
    ("Emma Stone", "the architect", "the engineer", "designed the new library", "Carl Fox"),
    ("Henry Bell", "the lawyer", "the judge", "spoke to the press", "Maya Hart"),
    ("Lucy Grey", "the chef", "the waiter", "opened a second restaurant", "Adam Cook"),
    ("Victor Lam", "the singer", "the drummer", "wrote the new album", "Rosa Vale"),
    ("Alice Byrne", "the principal", "the janitor", "closed the school for a day", "Ben Tate"),
    ("Frank Olsen", "the accountant", "the auditor", "found the missing invoices", "Kate Pike"),
    ("Irene Walsh", "the spokeswoman", "the minister", "answered the questions", "Joel Hirst"),
    ("George Nash", "the mayor", "the governor", "opened the new bridge", "Tara Lund"),
    ("Diane Frost", "the conductor", "the violinist", "left the orchestra", "Hugo Ward"),
    ("Martin Cruz", "the manager", "the cashier", "closed the store early", "Ella Snow"),
    ("Sophie Kent", "the curator", "the guard", "found the stolen painting", "Noah Finch"),
    ("Ralph Dean", "the referee", "the linesman", "stopped the match", "Zoe Platt"),
    ("Carol Penn", "the professor", "the student", "won the science prize", "Eric Lowry"),
    ("Brian Cole", "the sheriff", "the deputy", "arrested the suspect", "Ivy Marsh"),
    ("Nora Blake", "the pharmacist", "the doctor", "warned about the drug", "Owen Pratt"),
    ("Edwin Rhys", "the bishop", "the priest", "visited the prison", "Lena Voss"),
    ("Julia Hart", "the ambassador", "the consul", "met the prime minister", "Rick Tran"),
    ("Simon Clay", "the captain", "the sailor", "saved the crew", "Fay Morton"),
    ("Wendy Park", "the landlord", "the tenant", "sold the building", "Glen Hurst"),
    ("Arthur Boyd", "the gardener", "the butler", "planted the roses", "Mia Chase"),
]

FR: list[Row] = [
    ("Marc Dubois", "le trésorier", "le secrétaire", "a présenté le budget annuel", "Luc Martin"),
    ("Paul Girard", "le gardien", "l'attaquant", "a manqué le dernier entraînement", "Hugo Roux"),
    ("Henri Petit", "le réalisateur", "le producteur", "a quitté le film en mai", "Yves Morel"),
    ("David Moreau", "le président", "le fondateur", "a signé l'accord de fusion", "Jean Faure"),
    ("Louis Lambert", "le pilote", "le navigateur", "a posé l'avion dans le brouillard", "Marc Blanc"),
    ("Pierre Fournier", "le chirurgien", "l'infirmier", "est resté à la clinique", "Noël Gautier"),
    ("Gilles Leroy", "l'entraîneur", "le capitaine", "a félicité les jeunes joueurs", "Alain Brun"),
    ("Olivier Rey", "le rédacteur", "le photographe", "a quitté le magazine", "René Lucas"),
    ("Étienne Roche", "l'architecte", "l'ingénieur", "a dessiné la nouvelle bibliothèque", "Cyril Fabre"),
    ("Henri Barbier", "l'avocat", "le juge", "a parlé à la presse", "Marcel Dumas"),
    ("Lucien Garnier", "le cuisinier", "le serveur", "a ouvert un second restaurant", "Adrien Colin"),
    ("Victor Lemoine", "le chanteur", "le batteur", "a écrit le nouvel album", "Roland Vidal"),
    ("Albert Bonnet", "le directeur", "le concierge", "a fermé l'école pendant un jour", "Bruno Caron"),
    ("François Meyer", "le comptable", "l'auditeur", "a trouvé les factures manquantes", "Karim Perrin"),
    ("Igor Renaud", "le porte-parole", "le ministre", "a répondu aux questions", "Joël Hubert"),
    ("Georges Masson", "le maire", "le préfet", "a inauguré le nouveau pont", "Thierry Lefèvre"),
    ("Denis Fontaine", "le chef d'orchestre", "le violoniste", "a quitté l'orchestre", "Hugues Marchand"),
    ("Martin Chevalier", "le gérant", "le caissier", "a fermé le magasin tôt", "Émile Robin"),
    ("Sylvain Clément", "le conservateur", "le gardien", "a retrouvé le tableau volé", "Noé Gauthier"),
    ("Raoul Dufour", "l'arbitre", "le juge de touche", "a arrêté le match", "Zacharie Picard"),
    ("Claude Mercier", "le professeur", "l'étudiant", "a gagné le prix scientifique", "Éric Lacroix"),
    ("Bernard Giraud", "le commissaire", "l'inspecteur", "a arrêté le suspect", "Ivan Rolland"),
    ("Nicolas Blanchard", "le pharmacien", "le médecin", "a mis en garde contre le médicament", "Octave Prévost"),
    ("Édouard Riviere", "l'évêque", "le prêtre", "a visité la prison", "Léon Vasseur"),
    ("Jules Aubert", "l'ambassadeur", "le consul", "a rencontré le premier ministre", "Rémi Tessier"),
    ("Simon Collet", "le capitaine", "le matelot", "a sauvé l'équipage", "Fabien Morin"),
    ("Walter Paris", "le propriétaire", "le locataire", "a vendu l'immeuble", "Guy Hervé"),
    ("Arthur Boyer", "le jardinier", "le majordome", "a planté les roses", "Mathieu Charpentier"),
]

IT: list[Row] = [
    ("Marco Rossi", "il tesoriere", "il segretario", "ha presentato il bilancio annuale", "Luca Conti"),
    ("Paolo Greco", "il portiere", "l'attaccante", "ha saltato l'ultimo allenamento", "Ugo Marini"),
    ("Enrico Bruno", "il regista", "il produttore", "ha lasciato il film a maggio", "Sergio Gallo"),
    ("Davide Ferrari", "il presidente", "il fondatore", "ha firmato l'accordo di fusione", "Nino Costa"),
    ("Lorenzo Ricci", "il pilota", "il navigatore", "ha fatto atterrare l'aereo nella nebbia", "Mario Fontana"),
    ("Pietro Moretti", "il chirurgo", "l'infermiere", "è rimasto in clinica", "Gianni Barbieri"),
    ("Giorgio Lombardi", "l'allenatore", "il capitano", "ha lodato i giovani giocatori", "Ivo Santoro"),
    ("Oscar Mancini", "il redattore", "il fotografo", "ha lasciato la rivista", "Renato Rinaldi"),
    ("Emilio Caruso", "l'architetto", "l'ingegnere", "ha progettato la nuova biblioteca", "Carlo Ferri"),
    ("Enzo Galli", "l'avvocato", "il giudice", "ha parlato alla stampa", "Massimo Leone"),
    ("Luigi Longo", "il cuoco", "il cameriere", "ha aperto un secondo ristorante", "Adriano Gentile"),
    ("Vittorio Martinelli", "il cantante", "il batterista", "ha scritto il nuovo album", "Rocco Vitale"),
    ("Alberto Serra", "il preside", "il bidello", "ha chiuso la scuola per un giorno", "Bruno Villa"),
    ("Franco Marchetti", "il contabile", "il revisore", "ha trovato le fatture mancanti", "Corrado Pellegrini"),
    ("Ivano Farina", "il portavoce", "il ministro", "ha risposto alle domande", "Gino Sala"),
    ("Giacomo Bianco", "il sindaco", "il prefetto", "ha inaugurato il nuovo ponte", "Tullio Neri"),
    ("Dario Fabbri", "il direttore d'orchestra", "il violinista", "ha lasciato l'orchestra", "Ugo Monti"),
    ("Mauro Cattaneo", "il gestore", "il cassiere", "ha chiuso il negozio presto", "Elio Morelli"),
    ("Sandro Testa", "il curatore", "il custode", "ha ritrovato il quadro rubato", "Nello Grasso"),
    ("Raffaele Pagano", "l'arbitro", "il guardalinee", "ha fermato la partita", "Zeno Valentini"),
    ("Claudio Bellini", "il professore", "lo studente", "ha vinto il premio scientifico", "Elia Guerra"),
    ("Bruno Palumbo", "il commissario", "l'ispettore", "ha arrestato il sospettato", "Ivo Sanna"),
    ("Nicola Fiore", "il farmacista", "il medico", "ha messo in guardia sul farmaco", "Ottavio Riva"),
    ("Edoardo Marino", "il vescovo", "il sacerdote", "ha visitato il carcere", "Leone Bassi"),
    ("Giulio Benedetti", "l'ambasciatore", "il console", "ha incontrato il primo ministro", "Remo Parisi"),
    ("Simone Cirillo", "il capitano", "il marinaio", "ha salvato l'equipaggio", "Fabio Messina"),
    ("Walter Silvestri", "il proprietario", "l'inquilino", "ha venduto il palazzo", "Guido Orlando"),
    ("Arturo Ferrara", "il giardiniere", "il maggiordomo", "ha piantato le rose", "Mattia Caputo"),
]

HE: list[Row] = [
    ("דני לוי", "הגזבר", "המזכיר", "הציג את התקציב השנתי", "יוסי כהן"),
    ("אבי פרץ", "השוער", "החלוץ", "החמיץ את האימון האחרון", "רון ביטון"),
    ("משה אזולאי", "הבמאי", "המפיק", "עזב את הסרט בחודש מאי", "שי דהן"),
    ("דוד מזרחי", "הנשיא", "המייסד", "חתם על הסכם המיזוג", "נועם אברהם"),
    ("גיל פרידמן", "הטייס", "הנווט", "הנחית את המטוס בערפל", "מרק דוד"),
    ("פנחס חדד", "המנתח", "האח", "נשאר במרפאה כל הלילה", "יונתן שמעוני"),
    ("גדי אוחיון", "המאמן", "הקפטן", "שיבח את השחקנים הצעירים", "עידו שלום"),
    ("עומר רוזן", "העורך", "הצלם", "עזב את המגזין", "רועי לנדאו"),
    ("איתן גבאי", "האדריכל", "המהנדס", "תכנן את הספרייה החדשה", "כרמל פוקס"),
    ("חיים בן דוד", "הפרקליט", "השופט", "דיבר עם העיתונאים", "מאיר הרשקו"),
    ("לירן גולן", "הטבח", "המלצר", "פתח מסעדה שנייה", "אדם קוק"),
    ("ויקטור לם", "הזמר", "המתופף", "כתב את האלבום החדש", "רפאל ויס"),
    ("אלי ברק", "המנהל", "השרת", "סגר את בית הספר ליום אחד", "בני טל"),
    ("פרץ אולמן", "החשב", "המבקר", "מצא את החשבוניות החסרות", "קובי פייק"),
    ("אילן וולך", "הדובר", "השר", "ענה על השאלות", "יואל הירש"),
    ("גרשון נחום", "השר", "המושל", "חנך את הגשר החדש", "טל לוין"),
    ("דורון פרוסט", "המנצח", "הכנר", "עזב את התזמורת", "הלל ורד"),
    ("מרטין קרוז", "המנהל", "הקופאי", "סגר את החנות מוקדם", "אליהו שניר"),
    ("שגיא קנט", "האוצר", "השומר", "מצא את הציור הגנוב", "נח פינק"),
    ("רפי דיין", "השופט", "הקוון", "עצר את המשחק", "זאב פלטו"),
    ("קרול פן", "הפרופסור", "הסטודנט", "זכה בפרס המדעי", "ערן לורי"),
    ("ברק כץ", "המפקד", "הסגן", "עצר את החשוד", "עידן מרש"),
    ("נתן בלייק", "הרוקח", "הרופא", "הזהיר מפני התרופה", "עוז פרט"),
    ("אדוין ריס", "הבישוף", "הכומר", "ביקר בבית הכלא", "לוי ווס"),
    ("יוליוס הרט", "השגריר", "הקונסול", "פגש את ראש הממשלה", "ריק טרן"),
    ("שמעון קליי", "הקברניט", "המלח", "הציל את הצוות", "פבל מורטון"),
    ("ולטר פארק", "המשכיר", "השוכר", "מכר את הבניין", "גלעד הרסט"),
    ("ארתור בויד", "הגנן", "המשרת", "שתל את הוורדים", "מיכה צ'ייס"),
]
